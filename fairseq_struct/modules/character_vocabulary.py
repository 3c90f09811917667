"""Character vocabulary for BERT-ELMo's whole-word input (Polatbilek; design.md §4.3).

A word becomes [begin-of-word, c_1, ..., c_k, end-of-word, pad, ...] of width `max_chars` (ELMo's
layout), truncated if longer; a character outside the vocabulary becomes <unk>. Ids 0-3 are pad,
unk, begin-of-word and end-of-word, then the characters in sorted order, so the vocabulary is a
function of its character set (`as_tensor` / `from_tensor` keep the set in a checkpoint buffer).
"""

from typing import Iterable, List

import torch
from fairseq.data import Dictionary
from torch import LongTensor, Tensor

PAD, UNK, BEGIN_OF_WORD, END_OF_WORD = 0, 1, 2, 3
NUM_SPECIAL = 4


class CharacterVocabulary:
    def __init__(self, characters: Iterable[str]) -> None:
        self.characters: List[str] = sorted(set(characters))
        if any(len(c) != 1 for c in self.characters):
            raise ValueError("CharacterVocabulary takes single characters")
        self._ids = {c: NUM_SPECIAL + i for i, c in enumerate(self.characters)}

    @classmethod
    def from_words(cls, words: Iterable[str]) -> "CharacterVocabulary":
        return cls(c for word in words for c in word)

    @classmethod
    def from_dictionary(cls, dictionary: Dictionary) -> "CharacterVocabulary":
        """The characters of every symbol of a fairseq word Dictionary (specials included)."""
        return cls.from_words(dictionary.symbols)

    @classmethod
    def from_tensor(cls, code_points: Tensor) -> "CharacterVocabulary":
        return cls(chr(c) for c in code_points.tolist())

    def as_tensor(self) -> LongTensor:
        """Code points of the characters, in id order (id = NUM_SPECIAL + position)."""
        return torch.tensor([ord(c) for c in self.characters], dtype=torch.long)

    def __len__(self) -> int:
        return NUM_SPECIAL + len(self.characters)

    @property
    def pad(self) -> int:
        return PAD

    @property
    def unk(self) -> int:
        return UNK

    def encode_word(self, word: str, max_chars: int = 50) -> List[int]:
        """Exactly max_chars ids: begin-of-word, the first max_chars - 2 characters, end-of-word,
        then padding."""
        if max_chars < 3:
            raise ValueError(f"max_chars must leave room for one character, got {max_chars}")
        ids = [BEGIN_OF_WORD] + [self._ids.get(c, UNK) for c in word[: max_chars - 2]]
        ids.append(END_OF_WORD)
        return ids + [PAD] * (max_chars - len(ids))

    def encode_words(self, words: Iterable[str], max_chars: int = 50) -> LongTensor:
        """(len(words), max_chars) ids; an empty list gives a (0, max_chars) tensor."""
        rows = [self.encode_word(word, max_chars) for word in words]
        return torch.tensor(rows, dtype=torch.long).view(-1, max_chars)
