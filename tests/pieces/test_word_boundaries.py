"""Word boundaries from the dictionary alone (design.md §4) and the per-token word structure."""

import pytest
import torch
from fairseq.data import Dictionary

from fairseq_struct.pieces.markers import MORPHEME_BOUNDARY
from fairseq_struct.pieces.word_boundaries import word_start_lookup, word_structure


def _dictionary(symbols):
    dictionary = Dictionary()
    for symbol in symbols:
        dictionary.add_symbol(symbol)
    dictionary.add_symbol("<mask>")
    return dictionary


def test_word_starts_are_marked_pieces_and_special_symbols():
    dictionary = _dictionary(["\u2581ev", "ler", "\u2581gör", MORPHEME_BOUNDARY, "."])
    starts = word_start_lookup(dictionary)
    by_symbol = {dictionary[i]: bool(starts[i]) for i in range(len(dictionary))}
    assert by_symbol == {
        "<s>": True,
        "<pad>": True,
        "</s>": True,
        "<unk>": True,
        "\u2581ev": True,
        "ler": False,
        "\u2581gör": True,
        MORPHEME_BOUNDARY: False,
        ".": False,
        "<mask>": True,
    }


def test_word_level_dictionary_needs_tokens_are_words():
    dictionary = _dictionary(["evler", "gördüm"])
    with pytest.raises(ValueError, match="--tokens-are-words"):
        word_start_lookup(dictionary)
    assert bool(word_start_lookup(dictionary, tokens_are_words=True).all())


def test_morph_mode_morphemes_of_one_word_are_one_word():
    # "gör￭eme￭dik ev￭ler" as SentencePiece pieces, boundary marks kept and dropped.
    dictionary = _dictionary(["\u2581gör", "eme", "dik", "\u2581ev", "ler", MORPHEME_BOUNDARY])
    lookup = word_start_lookup(dictionary)
    for pieces in (
        ["\u2581gör", "eme", "dik", "\u2581ev", "ler"],
        [
            "\u2581gör",
            MORPHEME_BOUNDARY,
            "eme",
            MORPHEME_BOUNDARY,
            "dik",
            "\u2581ev",
            MORPHEME_BOUNDARY,
            "ler",
        ],
    ):
        tokens = torch.tensor(
            [[dictionary.bos()] + [dictionary.index(p) for p in pieces] + [dictionary.eos()]]
        )
        structure = word_structure(lookup[tokens], tokens, dictionary.eos())
        first_word_length = pieces.index("\u2581ev")
        assert structure.word_index[0].tolist() == (
            [0] + [1] * first_word_length + [2] * (len(pieces) - first_word_length) + [3]
        )


def test_word_structure_of_a_padded_pair():
    dictionary = _dictionary(["\u2581a", "b", "c", "\u2581d"])
    a, b, c, d = (dictionary.index(s) for s in ["\u2581a", "b", "c", "\u2581d"])
    bos, eos, pad = dictionary.bos(), dictionary.eos(), dictionary.pad()
    tokens = torch.tensor([[bos, a, b, c, eos, d, eos], [bos, d, eos, pad, pad, pad, pad]])
    structure = word_structure(word_start_lookup(dictionary)[tokens], tokens, eos)
    assert structure.word_index.tolist() == [[0, 1, 1, 1, 2, 3, 4], [0, 1, 2, 3, 4, 5, 6]]
    assert structure.position_in_word.tolist() == [[0, 0, 1, 2, 0, 0, 0], [0] * 7]
    assert structure.word_length.tolist() == [[1, 3, 3, 3, 1, 1, 1], [1] * 7]
    assert structure.segment_index.tolist() == [[0, 0, 0, 0, 0, 1, 1], [0, 0, 0, 1, 1, 1, 1]]
