"""BERT2D (design.md §4.2): the subword-id rules, the words' position ids, the parameter count."""

import pytest
import torch
from fairseq.data import Dictionary

import fairseq_struct.plugin  # noqa: F401  (registers the models)
from fairseq_struct.modules.structural_position_embedding import subword_position_ids
from fairseq_struct.pieces.word_boundaries import word_start_lookup, word_structure
from fairseq_struct.testing.build_from_arch import build_model_from_arch


def _subword_ids(m: int, max_intermediate: int, strategy: str = "uniform"):
    positions = torch.arange(m)
    return subword_position_ids(
        positions, torch.full_like(positions, m), max_intermediate, strategy
    ).tolist()


@pytest.mark.parametrize(
    "m, M, expected",
    [
        (5, 3, [0, 2, 3, 4, 1]),
        (12, 3, [0, 2, 2, 2, 3, 3, 3, 3, 3, 4, 4, 1]),
        (12, 1, [0] + [2] * 10 + [1]),
        (3, 1, [0, 2, 1]),
        (3, 3, [0, 2, 1]),
        (3, 10, [0, 2, 1]),
        (1, 3, [0]),
        (2, 3, [0, 1]),
    ],
)
def test_spec_worked_table_uniform(m, M, expected):
    assert _subword_ids(m, M) == expected


def test_paper_and_leftover_strategies():
    # paper: 2 + floor(j M / n) for n = 10 > M = 3.
    assert _subword_ids(12, 3, "paper") == [0, 2, 2, 2, 2, 3, 3, 3, 4, 4, 4, 1]
    assert _subword_ids(5, 3, "paper") == [0, 2, 3, 4, 1]
    assert _subword_ids(12, 3, "leftover_as_last") == [0, 2, 3, 4] + [1] * 8
    for strategy in ("uniform", "paper", "leftover_as_last"):
        for M in (1, 3, 10):
            for m in range(1, 40):
                ids = _subword_ids(m, M, strategy)
                assert max(ids) <= M + 1, "the subword table has M + 2 rows"


def _piece_dictionary(pieces):
    dictionary = Dictionary()
    for piece in pieces:
        dictionary.add_symbol(piece)
    dictionary.add_symbol("<mask>")
    return dictionary


def test_word_positions_do_not_depend_on_the_vocabulary_size(tmp_path):
    """The paper's Fig. 3: however finely SentencePiece cuts, word position ids are the same."""
    from fairseq_struct.demo_data import synthetic_en_tr
    from fairseq_struct.morph.sentencepiece_model import SentencePieceModel

    synthetic_en_tr.main(
        [
            "--out-dir",
            str(tmp_path / "raw"),
            "--train",
            "1500",
            "--valid",
            "20",
            "--test",
            "20",
            "--seed",
            "3",
        ]
    )
    text = (tmp_path / "raw" / "train.tr").read_text(encoding="utf-8").splitlines()
    sentences = (tmp_path / "raw" / "valid.tr").read_text(encoding="utf-8").splitlines()
    word_positions = []
    for vocab_size in (120, 900):
        model = SentencePieceModel.train(text, tmp_path / f"spm{vocab_size}.model", vocab_size)
        encoded = [model.encode(sentence) for sentence in sentences]
        dictionary = _piece_dictionary(sorted({p for pieces in encoded for p in pieces}))
        lookup = word_start_lookup(dictionary)
        per_word = []
        for pieces in encoded:
            tokens = torch.tensor(
                [[dictionary.bos()] + [dictionary.index(p) for p in pieces] + [dictionary.eos()]]
            )
            structure = word_structure(lookup[tokens], tokens, dictionary.eos())
            first_piece = structure.position_in_word[0] == 0
            per_word.append(structure.word_index[0][first_piece].tolist())
        word_positions.append((per_word, sum(map(len, encoded))))
    (coarse, coarse_tokens), (fine, fine_tokens) = word_positions
    assert coarse_tokens > fine_tokens, "the two vocabularies should cut differently"
    assert coarse == fine
    assert all(len(words) == len(s.split()) + 2 for words, s in zip(coarse, sentences))


def _base_dictionary():
    return _piece_dictionary([f"\u2581w{i}" for i in range(500)] + [f"p{i}" for i in range(500)])


@pytest.mark.parametrize("M, expected_difference", [(1, 2304), (10, 9216)])
def test_parameter_count_is_m_plus_2_rows_more_than_1d(M, expected_difference):
    dictionary = _base_dictionary()

    def count(**overrides):
        model = build_model_from_arch("bert2d_base", dictionary, **overrides)
        return sum(p.numel() for p in model.parameters())

    assert count(max_intermediate_subwords=M) - count(position_embedding="1d") == (
        expected_difference
    )
    assert expected_difference == (M + 2) * 768


def test_explicit_word_starts_keep_the_positions_of_masked_words():
    """Masking turns the pieces of a word into <mask> symbols, each a word of its own by the
    dictionary: the task's word starts (from the unmasked tokens) keep the original positions."""
    dictionary = _base_dictionary()
    model = build_model_from_arch("bert2d_tiny", dictionary, seed=0).eval()
    pieces = ["\u2581w1", "p1", "p2", "\u2581w2", "\u2581w3", "p3"]
    tokens = torch.tensor(
        [[dictionary.bos()] + [dictionary.index(p) for p in pieces] + [dictionary.eos()]]
    )
    masked = tokens.clone()
    masked[0, 1:4] = dictionary.index("<mask>")  # the whole first word
    captured = []
    embed_positions = model.encoder.sentence_encoder.embed_positions
    embed_positions.register_forward_hook(lambda module, args, output: captured.append(output))
    with torch.no_grad():
        model(tokens, features_only=True)
        model(masked, features_only=True, word_starts=word_start_lookup(dictionary)[tokens])
        model(masked, features_only=True)
    original, explicit, implicit = captured
    assert torch.equal(original, explicit)
    assert not torch.allclose(original, implicit)


@pytest.mark.parametrize("mode", ["1d", "2d"])
def test_a_sequence_beyond_the_position_table_is_a_clear_error(mode):
    dictionary = _base_dictionary()
    model = build_model_from_arch(
        "bert2d_tiny", dictionary, seed=0, position_embedding=mode, max_positions=8
    ).eval()
    word = dictionary.index("\u2581w1")
    too_many_words = torch.tensor([[dictionary.bos()] + [word] * 8 + [dictionary.eos()]])
    with torch.no_grad(), pytest.raises(ValueError, match=r"needs position 9 but the model has 8"):
        model(too_many_words, features_only=True)


def test_2d_positions_allow_more_tokens_than_positions_when_the_words_fit():
    """Word positions count words, not pieces: 10 tokens in 4 words fit an 8-row table."""
    dictionary = _base_dictionary()
    model = build_model_from_arch(
        "bert2d_tiny", dictionary, seed=0, position_embedding="2d", max_positions=8
    ).eval()
    word = [dictionary.index(p) for p in ("\u2581w1", "p1", "p2", "p3")]
    tokens = torch.tensor([[dictionary.bos()] + word * 2 + [dictionary.eos()]])
    with torch.no_grad():
        features, _ = model(tokens, features_only=True)
    assert features.shape == (1, 10, 128)


@pytest.mark.parametrize("mode", ["1d", "2d"])
def test_absolute_position_encoders_attend_with_the_fused_kernel(mode, monkeypatch):
    """No relative-position term: fairseq's attention layer calls torch's
    scaled_dot_product_attention (flash / memory-efficient kernels on a GPU), in training too."""
    import torch.nn.functional as F

    fused = F.scaled_dot_product_attention
    calls = []

    def counted(*args, **kwargs):
        calls.append(args[0].shape)
        return fused(*args, **kwargs)

    monkeypatch.setattr(F, "scaled_dot_product_attention", counted)
    dictionary = _base_dictionary()
    model = build_model_from_arch("bert2d_tiny", dictionary, seed=0, position_embedding=mode)
    tokens = torch.tensor([[dictionary.bos(), 5, 600, 6, dictionary.eos(), dictionary.pad()]])
    model.train()(tokens, features_only=True)[0].sum().backward()
    assert len(calls) == 2, calls  # once per layer of bert2d_tiny
