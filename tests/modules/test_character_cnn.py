"""BERT-ELMo's character CNN word embedder and character vocabulary (design.md §4.3; Polatbilek)."""

import math

import pytest
import torch
from fairseq.data import Dictionary

from fairseq_struct.modules.character_cnn import (
    CHARACTER_FILTERS,
    HIGHWAY_GATE_BIAS,
    NUM_CHARACTER_FILTERS,
    CharacterCNNWordEmbedder,
    Highway,
)
from fairseq_struct.modules.character_vocabulary import (
    BEGIN_OF_WORD,
    END_OF_WORD,
    PAD,
    UNK,
    CharacterVocabulary,
)

WORDS = ["ev", "evler", "evlerde", "kitap", "kitaplar", "okudum"]


@pytest.fixture
def vocabulary() -> CharacterVocabulary:
    return CharacterVocabulary.from_words(WORDS)


@pytest.fixture
def embedder(vocabulary) -> CharacterCNNWordEmbedder:
    torch.manual_seed(0)
    return CharacterCNNWordEmbedder(len(vocabulary), output_dim=24).eval()


def test_filters_are_the_seven_widths_with_1056_in_all(embedder):
    assert [(conv.kernel_size[0], conv.out_channels) for conv in embedder.convolutions] == list(
        CHARACTER_FILTERS
    )
    assert NUM_CHARACTER_FILTERS == embedder.num_filters == 1056
    assert embedder.char_embed.embedding_dim == 16
    assert len(embedder.highways) == 2
    assert embedder.projection.in_features == 1056


def test_output_shape_keeps_leading_dimensions(vocabulary, embedder):
    ids = vocabulary.encode_words(WORDS * 2).view(3, 4, 50)
    out = embedder(ids)
    assert out.shape == (3, 4, 24)
    assert torch.isfinite(out).all()


def test_highway_gate_starts_carrying_the_input():
    highway = Highway(8)
    assert torch.all(highway.gate.bias == HIGHWAY_GATE_BIAS)
    assert torch.sigmoid(torch.tensor(HIGHWAY_GATE_BIAS)).item() == pytest.approx(0.1192, abs=1e-4)
    # With the gate's weights at zero only the bias speaks: y = 0.12 relu(Ax) + 0.88 x.
    torch.nn.init.zeros_(highway.gate.weight)
    x = torch.randn(5, 8)
    g = 1 / (1 + math.exp(2.0))
    expected = g * torch.relu(highway.transform(x)) + (1 - g) * x
    torch.testing.assert_close(highway(x), expected)


def test_highway_at_initialisation_is_close_to_identity(embedder):
    torch.manual_seed(1)
    x = torch.relu(torch.randn(64, NUM_CHARACTER_FILTERS))
    highway = embedder.highways[0]
    gate = torch.sigmoid(highway.gate(x))
    assert gate.mean().item() < 0.2
    assert (highway(x) - x).norm() < 0.3 * x.norm()


def test_unseen_word_gets_its_own_finite_embedding(vocabulary, embedder):
    ids = vocabulary.encode_words(["çğüşö", "pekev", "ev", "çğ"])
    assert ids[0, 1:6].tolist() == [UNK] * 5  # characters never seen
    unk_only = torch.tensor([[BEGIN_OF_WORD, UNK, UNK, END_OF_WORD] + [PAD] * 46])
    padding_word = torch.full((1, 50), PAD)
    with torch.no_grad():
        out = embedder(ids)
        reference = embedder(torch.cat([unk_only, padding_word]))
    assert torch.isfinite(out).all()
    for row in out:
        assert not torch.allclose(row, reference[1], atol=1e-4)  # the padding word
    assert not torch.allclose(out[1], reference[0], atol=1e-4)  # "pekev": a new combination
    assert not torch.allclose(out[1], out[2], atol=1e-4)


def test_long_word_is_truncated(vocabulary, embedder):
    word = "evler" * 40
    ids = vocabulary.encode_word(word)
    assert len(ids) == 50
    assert ids[0] == BEGIN_OF_WORD and ids[-1] == END_OF_WORD
    assert ids[1:-1] == vocabulary.encode_word(word[:48])[1:-1]
    assert torch.isfinite(embedder(torch.tensor([ids]))).all()


@pytest.mark.parametrize("max_chars", [3, 5, 50])
def test_one_character_word_works_at_any_width(vocabulary, embedder, max_chars):
    ids = vocabulary.encode_words(["e"], max_chars=max_chars)
    assert ids.shape == (1, max_chars)
    out = embedder(ids)
    assert out.shape == (1, 24) and torch.isfinite(out).all()
    if max_chars < 7:
        # Padding up to the widest filter does not change the result.
        padded = torch.nn.functional.pad(ids, (0, 7 - max_chars), value=PAD)
        torch.testing.assert_close(out, embedder(padded))


def test_vocabulary_ids_are_deterministic_and_round_trip_as_tensor():
    dictionary = Dictionary()
    for word in reversed(WORDS):
        dictionary.add_symbol(word)
    vocabulary = CharacterVocabulary.from_dictionary(dictionary)
    again = CharacterVocabulary.from_words(reversed(dictionary.symbols))
    assert vocabulary.characters == again.characters == sorted(vocabulary.characters)
    restored = CharacterVocabulary.from_tensor(vocabulary.as_tensor())
    assert torch.equal(restored.encode_words(WORDS), vocabulary.encode_words(WORDS))
    assert len(vocabulary) == 4 + len(set("".join(dictionary.symbols)))
    assert vocabulary.encode_words([]).shape == (0, 50)
