"""Where words begin, found from the dictionary alone (design.md §4, first paragraph).

A piece that starts with WORD_START begins a word (SentencePiece: the project's pieces, XLM-R),
or every piece but a `##` continuation does (WordPiece: BERT, BERTurk, mBERT, BERT2D); every
special symbol is a word of its own, and in word-level data every token is (`tokens_are_words`).
So stock `fairseq-preprocess --only-source` data works unchanged.
"""

from dataclasses import dataclass
from typing import Optional, Tuple

import torch
from fairseq.data import Dictionary
from torch import Tensor

from fairseq_struct.pieces.markers import WORD_START

MASK_SYMBOL = "<mask>"
# WordPiece's mark of a piece that continues the word of the piece before it.
WORDPIECE_CONTINUATION = "##"


def is_special_symbol(dictionary: Dictionary, index: int) -> bool:
    symbol = dictionary[index]
    return (
        index < dictionary.nspecial
        or symbol == MASK_SYMBOL
        or symbol.startswith("madeupword")  # fairseq's --padding-factor filler symbols
    )


def special_symbol_lookup(dictionary: Dictionary) -> Tensor:
    """(vocab,) bool: True for the symbols that are never masking targets."""
    return torch.tensor([is_special_symbol(dictionary, i) for i in range(len(dictionary))])


def word_start_lookup(dictionary: Dictionary, tokens_are_words: bool = False) -> Tensor:
    """(vocab,) bool: True for the symbols that begin a word.

    The convention is the one most pieces follow: a vocabulary of either kind may hold a few
    symbols of the other's shape (mBERT has a `▁` character piece). Raises ValueError for a
    piece dictionary with neither mark: that is word-level data, which needs
    `tokens_are_words=True` (otherwise every sentence would be one long word).
    """
    if tokens_are_words:
        return torch.ones(len(dictionary), dtype=torch.bool)
    marked = torch.tensor([symbol.startswith(WORD_START) for symbol in dictionary.symbols])
    continued = torch.tensor(
        [symbol.startswith(WORDPIECE_CONTINUATION) for symbol in dictionary.symbols]
    )
    if not bool(marked.any()) and not bool(continued.any()):
        raise ValueError(
            f"the dictionary ({len(dictionary)} symbols) has no piece starting with "
            f"{WORD_START!r} (SentencePiece's word-start mark) nor with "
            f"{WORDPIECE_CONTINUATION!r} (WordPiece's continuation mark), so word boundaries "
            "cannot be found; for word-level data (one token per word, as for bert_elmo) pass "
            "--tokens-are-words"
        )
    starts = ~continued if int(continued.sum()) > int(marked.sum()) else marked
    return starts | special_symbol_lookup(dictionary)


@dataclass
class WordStructure:
    """Per token (batch, time): the word it belongs to, its place in the word, the word's
    length in tokens, and its sentence segment (0 up to and including the first </s>, 1 after:
    BERT's token types for sentence pairs). `max_words`: the most words of a sequence, when
    the data side counted them (a host int), else None."""

    word_index: Tensor
    position_in_word: Tensor
    word_length: Tensor
    segment_index: Tensor
    max_words: Optional[int] = None


def word_structure(
    word_starts: Tensor, tokens: Tensor, eos: int, max_words: Optional[int] = None
) -> WordStructure:
    """The WordStructure of a right-padded batch, from its (batch, time) word-start flags.

    Padding tokens are special symbols, so each is a one-token word after the last real word.
    A `</s>` closes its word: the token after it begins one even when it is a continuation
    piece (a window of a long context may start inside a word).
    """
    word_index, position_in_word, word_length, segment_index = word_structure_tensors(
        word_starts, tokens, eos
    )
    return WordStructure(
        word_index=word_index,
        position_in_word=position_in_word,
        word_length=word_length,
        segment_index=segment_index,
        max_words=max_words,
    )


def word_structure_tensors(
    word_starts: Tensor, tokens: Tensor, eos: int
) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
    """`word_structure` in plain torch: word index, position in the word, word length and
    segment of every token, (batch, time) each. The exported Hugging Face code carries a copy
    (export/hf_code/modeling_struct_encoder.py, checked by tests/export/test_hf_code_copies.py).
    """
    time = word_starts.shape[1]
    positions = torch.arange(time, device=word_starts.device).expand_as(word_starts)
    starts = word_starts.clone()
    starts[:, 0] = True  # a sequence always begins a word, whatever its first token
    starts[:, 1:] |= tokens[:, :-1].eq(eos)
    word_index = starts.long().cumsum(dim=1) - 1
    word_start_position = torch.where(starts, positions, 0).cummax(dim=1).values
    ends = torch.ones_like(starts)
    ends[:, :-1] = starts[:, 1:]
    last = torch.full_like(positions, time - 1)
    word_end_position = (
        torch.where(ends, positions, last).flip(dims=[1]).cummin(dim=1).values.flip(dims=[1])
    )
    is_eos = tokens.eq(eos).long()
    # Tokens after the first </s> are segment 1 (the first </s> itself closes segment 0).
    segment_index = ((is_eos.cumsum(dim=1) - is_eos) > 0).long()
    return (
        word_index,
        positions - word_start_position,
        word_end_position - word_start_position + 1,
        segment_index,
    )
