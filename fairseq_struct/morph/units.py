"""Cut labelled text into the units a pretrained encoder was trained on (design.md §5.4).

Everything is read from the pretraining data directory that `scripts/prepare-mlm.sh` wrote, or
from an imported model's (`fairseq-struct import-hf`), so that fine-tuning cuts text as
pretraining did. Each word is cut on its own (morph mode: after segmenting its sentence), so that
its units, and their character spans (`unit_spans`, for extractive QA), are known exactly.
"""

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple, Union

from fairseq.data import Dictionary

from fairseq_struct.hf_import.directory import REPORT_FILE as IMPORT_REPORT_FILE
from fairseq_struct.pieces.hf_tokenizer import TOKENIZER_FILE, TokenizerUnits
from fairseq_struct.pieces.markers import MORPHEME_BOUNDARY, WORD_START

PathLike = Union[str, Path]

PRETRAINING_REPORT = Path("text") / "prepare_report.json"
IMPORT_REPORT = Path(IMPORT_REPORT_FILE)
INUKTITUT_MODEL = Path("text") / "morfessor.iu.segm"
_NON_SPACE_RUN = re.compile(r"\S+")
_WHITESPACE = re.compile(r"\s")  # what str.isspace calls whitespace, found in C


class UnitError(ValueError):
    """A word that cannot be cut into the pretraining units."""


@dataclass(frozen=True)
class PretrainingUnits:
    """How a pretraining run cut its text, as its data directory records it."""

    data_dir: Path
    units: str  # "pieces", "words" or "tokenizer"
    mode: str  # "bpe" or "morph"
    lang: str
    # tokenizer units: {the tokenizer's special token: its fairseq name}
    special_names: Dict[str, str] = field(default_factory=dict, compare=False)
    # the most tokens the encoder takes, where the directory says (an imported model)
    max_tokens: Optional[int] = None

    @classmethod
    def from_data_dir(cls, data_dir: PathLike) -> "PretrainingUnits":
        data_dir = Path(data_dir)
        report_path = data_dir / PRETRAINING_REPORT
        if not report_path.exists() and (data_dir / IMPORT_REPORT).exists():
            report_path = data_dir / IMPORT_REPORT
        if not report_path.exists():
            raise FileNotFoundError(
                f"{report_path} not found: --pretraining-data must be the directory that "
                "scripts/prepare-mlm.sh wrote for the pretraining run (it holds dict.txt, "
                "spm.model and text/prepare_report.json), or one that "
                "fairseq-struct import-hf wrote (dict.txt, tokenizer.json, "
                f"{IMPORT_REPORT})"
            )
        report = json.loads(report_path.read_text(encoding="utf-8"))
        units = cls(
            data_dir,
            report["units"],
            report.get("mode", "bpe"),
            report.get("lang", "tr"),
            report.get("special_tokens", {}),
            report.get("tokens_per_sample"),
        )
        for needed in units.needed_files():
            if not needed.exists():
                raise FileNotFoundError(f"{needed} not found (needed for {units.describe()})")
        return units

    def needed_files(self) -> List[Path]:
        files = [self.dictionary_path]
        if self.units == "tokenizer":
            files.append(self.data_dir / TOKENIZER_FILE)
        if self.units == "pieces":
            files.append(self.data_dir / "spm.model")
            if self.mode == "morph" and self.lang == "iu":
                files.append(self.data_dir / INUKTITUT_MODEL)
        return files

    @property
    def dictionary_path(self) -> Path:
        return self.data_dir / "dict.txt"

    @property
    def tokens_are_words(self) -> bool:
        return self.units == "words"

    def describe(self) -> str:
        if self.units == "words":
            return f"Moses words ({self.lang})"
        if self.units == "tokenizer":
            return f"the pieces of {self.data_dir / TOKENIZER_FILE}"
        return f"SentencePiece pieces, {self.mode} mode ({self.lang})"

    def load_dictionary(self) -> Dictionary:
        return Dictionary.load(str(self.dictionary_path))


class UnitCutter:
    """Cuts sentences (lists of words) into the units of a pretraining run."""

    def __init__(self, units: PretrainingUnits, workers: int = 1) -> None:
        self.units = units
        self.workers = workers
        self._spm = None
        self._moses = None
        self._tokenizer = None
        if units.units == "tokenizer":
            self._tokenizer = TokenizerUnits(units.data_dir / TOKENIZER_FILE, units.special_names)
        elif units.units == "pieces":
            from fairseq_struct.morph.sentencepiece_model import SentencePieceModel

            self._spm = SentencePieceModel(units.data_dir / "spm.model")
        elif units.units == "words":
            from sacremoses import MosesTokenizer

            self._moses = MosesTokenizer(lang=units.lang)
        else:
            raise ValueError(f"unknown units {units.units!r} in {units.data_dir}")

    def cut(self, sentences: Sequence[Sequence[str]]) -> List[List[List[str]]]:
        """The units of every word of every sentence: result[s][w] is a non-empty list."""
        for sentence in sentences:
            for word in sentence:
                _check_word(word)
        if self._moses is not None:
            return [[self._moses_tokens(word) for word in sentence] for sentence in sentences]
        if self._tokenizer is not None:
            return [
                [units for units, _ in sentence]
                for sentence in self._tokenizer.cut_sentences(sentences)
            ]
        if self.units.mode == "morph":
            sentences = self._segment(sentences)
        return [[self._pieces(word) for word in sentence] for sentence in sentences]

    def cut_text(self, text: str) -> Tuple[List[List[str]], List[Tuple[int, int]]]:
        """The units of every whitespace word of `text`, and each unit's character span in it."""
        words = [(match.group(), match.start()) for match in _NON_SPACE_RUN.finditer(text)]
        if not words:
            return [], []
        if self._tokenizer is not None:  # spans from the tokenizer (it may lowercase, strip)
            (cut,) = self._tokenizer.cut_sentences([[word for word, _ in words]], with_spans=True)
            return [units for units, _ in cut], [
                (start + a, start + b)
                for (_, start), (_, word_spans) in zip(words, cut)
                for a, b in word_spans
            ]
        units = self.cut([[word for word, _ in words]])[0]
        spans: List[Tuple[int, int]] = []
        for (word, start), word_units in zip(words, units):
            spans.extend((start + a, start + b) for a, b in unit_spans(word, word_units))
        return units, spans

    def _segment(self, sentences: Sequence[Sequence[str]]) -> List[List[str]]:
        from fairseq_struct.morph.segmenters import segment_all

        lines = [" ".join(sentence) for sentence in sentences]
        # the pretraining data's segmenter (Inuktitut: its Morfessor model, never retrained)
        segmented = segment_all(self.units.lang, lines, self.workers, self.units.data_dir / "text")
        result = []
        for sentence, line in zip(sentences, segmented):
            words = line.split(" ")
            if [word.replace(MORPHEME_BOUNDARY, "") for word in words] != list(sentence):
                raise UnitError(f"segmentation changed the words of {' '.join(sentence)!r}")
            result.append(words)
        return result

    def _pieces(self, word: str) -> List[str]:
        pieces = self._spm.encode(word)
        if not pieces:
            raise UnitError(f"SentencePiece gave no piece for {word!r}")
        return pieces

    def _moses_tokens(self, word: str) -> List[str]:
        tokens = self._moses.tokenize(word, escape=False)
        return tokens or [word]


def unit_spans(word: str, units: Sequence[str]) -> List[Tuple[int, int]]:
    """The (start, end) character span in `word` of each of its units.

    Pieces spell the word exactly once ▁ and morpheme marks are removed (identity
    normalisation); Moses tokens (escape=False) are substrings of the word in order.
    """
    spans, position = [], 0
    for unit in units:
        text = unit.replace(WORD_START, "").replace(MORPHEME_BOUNDARY, "")
        start = word.find(text, position) if text else position
        if start < 0:
            raise UnitError(f"unit {unit!r} is not found in {word!r} after character {position}")
        spans.append((start, start + len(text)))
        position = start + len(text)
    return spans


def _check_word(word: str) -> None:
    if not word or _WHITESPACE.search(word):
        raise UnitError(f"a word must be non-empty and hold no whitespace: {word!r}")
    for mark, name in ((WORD_START, "U+2581 (word start)"), (MORPHEME_BOUNDARY, "U+FFED")):
        if mark in word:
            raise UnitError(f"the word {word!r} holds the reserved mark {name}")
