"""The words of a probe's contexts: what a word is, how probes name one, how one is replaced.

A context's words are its whitespace words without the punctuation around them or a proper
noun's suffix after an apostrophe ("Ankara'dır" is "Ankara"). A probe names a word by its form,
compared after Turkish lower-casing (İ -> i, I -> ı) and Unicode NFC; its first occurrence counts.
"""

import re
import unicodedata
from dataclasses import dataclass
from typing import List, Optional, Sequence

APOSTROPHES = "'\u2019"
_WORD_RUN = re.compile(r"\S+")


def turkish_lower(text: str) -> str:
    """Lower-casing that keeps Turkish dotted and dotless i apart: İ -> i, I -> ı."""
    text = unicodedata.normalize("NFC", text)
    return text.replace("İ", "i").replace("I", "ı").lower()


def same_word(a: str, b: str) -> bool:
    return turkish_lower(a) == turkish_lower(b)


@dataclass(frozen=True)
class ContextWord:
    """A word of a context: its form, its character span, the whitespace word that holds it."""

    form: str
    start: int
    end: int
    whitespace_word: int


def context_words(text: str) -> List[ContextWord]:
    """The words of `text`, one per whitespace word that has a letter or digit."""
    words = []
    for index, match in enumerate(_WORD_RUN.finditer(text)):
        token = match.group()
        characters = [i for i, char in enumerate(token) if char.isalnum()]
        if not characters:
            continue  # punctuation only: "|||", "-", ";"
        start, end = characters[0], characters[-1] + 1
        for position in range(start, end):
            if token[position] in APOSTROPHES:  # a proper noun's suffix: Ankara'dır
                end = position
                break
        offset = match.start()
        words.append(ContextWord(token[start:end], offset + start, offset + end, index))
    return words


def find_word(words: Sequence[ContextWord], word: str) -> Optional[int]:
    """Index in `words` of the first occurrence of `word` (Turkish case-insensitive)."""
    wanted = turkish_lower(word)
    for index, candidate in enumerate(words):
        if turkish_lower(candidate.form) == wanted:
            return index
    return None


def _with_case_of(model: str, replacement: str) -> str:
    if len(model) > 1 and model.isupper():
        return replacement.upper()
    if model[:1].isupper():
        return replacement[:1].upper() + replacement[1:]
    return replacement


def replace_word(text: str, word: str, replacement: str) -> str:
    """`text` with every occurrence of `word` replaced, its capitalisation kept (Barış -> Wug)."""
    pieces, position = [], 0
    for candidate in context_words(text):
        if same_word(candidate.form, word):
            pieces.append(text[position : candidate.start])
            pieces.append(_with_case_of(candidate.form, replacement))
            position = candidate.end
    return "".join(pieces) + text[position:]
