"""Inuktitut morphological segmentation with Morfessor Baseline (design.md §3).

`InuktitutSegmenter` learns Morfessor Baseline (Creutz & Lagus 2007; Morfessor 2.0, Virpioja et
al. 2013) from the training targets and cuts the letters of every word at the model's Viterbi
segmentation ("Illumut nunamik." -> "Illu￭mut nuna￭mik."), as `TurkishSegmenter.segment` does.
The model file is Morfessor's segmentation-file format (a "count morph + morph" line per training
word) after one comment line of settings; loading replays it and never unpickles anything.
"""

import json
import logging
import math
import random
import re
import unicodedata
from collections import Counter
from pathlib import Path
from typing import Any, Dict, Iterable, Iterator, Optional, Sequence, Tuple, Union

from fairseq_struct.corpus_io import atomic_write_lines
from fairseq_struct.pieces.markers import MORPHEME_BOUNDARY
from fairseq_struct.progress import StageProgress

logger = logging.getLogger(__name__)

PathLike = Union[str, Path]

# What `save` writes first; `load` refuses a file that does not start with it.
_HEADER_PREFIX = "# fairseq_struct InuktitutSegmenter "
# Morfessor's segmentation-file separator between the morphs of one word.
_CONSTRUCTION_SEPARATOR = " + "
DAMPENINGS = ("none", "log", "ones")
# Morfessor's Viterbi search considers morphs up to this many characters (its own default).
_MAX_MORPH_CHARS = 30
# The per-type cache is cleared when it reaches this many entries, bounding memory.
_MAX_CACHE_ENTRIES = 500_000

_WHITESPACE = re.compile(r"(\s+)")


def _import_morfessor() -> Any:
    try:
        import morfessor
    except ImportError as error:
        raise ImportError(
            "Inuktitut segmentation (--mode morph --tgt-lang iu) needs Morfessor 2.0: "
            f"`pip install morfessor==2.0.6`. Import failed with: {error}"
        ) from error
    # Morfessor draws a progress bar on stderr for every training epoch otherwise.
    morfessor.utils.show_progress_bar = False
    # It logs one DEBUG line per word and epoch, which under fairseq's DEBUG root logger costs
    # more time than the training itself.
    logging.getLogger("morfessor").setLevel(logging.INFO)
    return morfessor


class _EpochProgress:
    """Called by Morfessor's batch training with the word types of each epoch, in order."""

    def __init__(self) -> None:
        self.epoch = 0

    def __call__(self, compounds: Sequence[str]) -> Iterator[str]:
        self.epoch += 1
        stage = f"Morfessor training, epoch {self.epoch}"
        with StageProgress(stage, total=len(compounds), unit="word types") as progress:
            for compound in compounds:
                yield compound
                progress.update()


def _is_letter(char: str) -> bool:
    # Syllabics are category Lo; combining marks (M*) belong to the letter before them.
    return char.isalpha() or unicodedata.category(char).startswith("M")


def split_affixes(word: str) -> Tuple[str, str, str]:
    """(leading non-letters, core from the first to the last letter, trailing non-letters)."""
    start = 0
    while start < len(word) and not _is_letter(word[start]):
        start += 1
    end = len(word)
    while end > start and not _is_letter(word[end - 1]):
        end -= 1
    return word[:start], word[start:end], word[end:]


def _model_form(core: str) -> str:
    """What Morfessor sees: lower-cased character by character, so offsets stay the same.

    Romanized Inuktitut capitalises names and sentence starts; without lower-casing "Nunavut"
    and "nunavut" would be learnt as unrelated words. A character whose lower case is longer
    (İ -> i̇) is kept as it is, so that cuts in the model form are cuts in the original.
    """
    return "".join(low if len(low := char.lower()) == 1 else char for char in core)


def _dampen(count: int, dampening: str) -> int:
    if dampening == "ones":
        return 1
    if dampening == "log":
        # Morfessor's own `--dampening log`: a hapax keeps count 1.
        return int(round(math.log(count + 1, 2)))
    return count


class InuktitutSegmenter:
    """Splits the words of Inuktitut lines into Morfessor Baseline morphs.

    `train` learns from raw lines (the target side of the training split only), `save`/`load`
    keep the model as text, `segment` cuts a line. Defaults, and why:

    - word *types* with log-dampened counts (`dampening="log"`, Morfessor's `--dampening
      log`): training on tokens makes frequent words so cheap to store whole that Morfessor
      under-segments them, and Inuktitut is mostly rare, long words (a type/token ratio of
      0.42, Soulos et al., footnote 3); plain types (`"ones"`) would split frequent function
      words and names into pieces as eagerly as hapaxes. Log counts keep hapaxes at 1 while
      letting the most frequent words stay whole.
    - `corpus_weight=1.0`: Morfessor's default MDL balance between lexicon and corpus cost;
      a larger weight gives fewer, longer morphs.
    - `seed=1`: Morfessor shuffles the training words each epoch with Python's `random`;
      training seeds it (and restores the caller's random state), so the same lines give the
      same model.
    """

    def __init__(
        self,
        model: Any = None,
        corpus_weight: float = 1.0,
        dampening: str = "log",
        lowercase: bool = True,
    ) -> None:
        if dampening not in DAMPENINGS:
            raise ValueError(f"dampening must be one of {DAMPENINGS}, not {dampening!r}")
        self.morfessor = _import_morfessor()
        self.model = model
        self.corpus_weight = corpus_weight
        self.dampening = dampening
        self.lowercase = lowercase
        self.words = 0  # whitespace words segmented so far, for speed reports
        self._cache: Dict[str, str] = {}

    # -- training, saving, loading ------------------------------------------------------------

    def train(self, lines: Iterable[str], seed: int = 1, max_epochs: Optional[int] = None) -> None:
        """Learn the model from raw lines (only their word cores; see `split_affixes`)."""
        counts: Counter = Counter()
        for number, line in enumerate(lines, start=1):
            _refuse_boundary_mark(line, f"training line {number}")
            for word in line.split():
                core = split_affixes(word)[1]
                if core:
                    counts[self._form(core)] += 1
        if not counts:
            raise ValueError("cannot train a Morfessor model: the training lines hold no words")
        model = self.morfessor.BaselineModel(corpusweight=self.corpus_weight)
        model.load_data(
            ((count, form) for form, count in counts.items()),
            count_modifier=lambda count: _dampen(count, self.dampening),
        )
        state = random.getstate()
        random.seed(seed)
        # Morfessor's own per-epoch progress hook (a bar of dots, off in _import_morfessor) is
        # replaced by ours for the duration of training: word types done, rate and ETA per epoch.
        baseline, stock_progress = self.morfessor.baseline, self.morfessor.baseline._progress
        baseline._progress = _EpochProgress()
        try:
            epochs, cost = model.train_batch(max_epochs=max_epochs)
        finally:
            baseline._progress = stock_progress
            random.setstate(state)
        logger.info(
            "Morfessor: %d word types, %d epochs, cost %.1f, %d morph types",
            len(counts),
            epochs,
            cost,
            len(model.get_constructions()),
        )
        self.model = model
        self._cache.clear()

    def save(self, path: PathLike) -> None:
        """Write the model as a Morfessor segmentation file with a settings comment, atomically."""
        self._require_model()
        settings = {
            "corpus_weight": self.corpus_weight,
            "dampening": self.dampening,
            "lowercase": self.lowercase,
        }
        lines = [_HEADER_PREFIX + json.dumps(settings, sort_keys=True)]
        for count, _, morphs in self.model.get_segmentations():
            lines.append(f"{count} {_CONSTRUCTION_SEPARATOR.join(morphs)}")
        atomic_write_lines(path, lines)

    @classmethod
    def load(cls, path: PathLike) -> "InuktitutSegmenter":
        """A segmenter with the model `save` wrote; the same segmentations as before saving."""
        path = Path(path)
        with open(path, encoding="utf-8") as file:
            header = file.readline().rstrip("\n")
        if not header.startswith(_HEADER_PREFIX):
            raise ValueError(
                f"{path}:1: expected an InuktitutSegmenter model starting with "
                f"{_HEADER_PREFIX.strip()!r}, found {header[:80]!r}"
            )
        try:
            settings = json.loads(header[len(_HEADER_PREFIX) :])
            segmenter = cls(
                corpus_weight=float(settings["corpus_weight"]),
                dampening=settings["dampening"],
                lowercase=bool(settings["lowercase"]),
            )
        except (ValueError, KeyError, TypeError) as error:
            raise ValueError(f"{path}:1: unreadable model settings {header!r}: {error}") from None
        model = segmenter.morfessor.BaselineModel(corpusweight=segmenter.corpus_weight)
        model.load_segmentations(_read_segmentations(path))
        segmenter.model = model
        return segmenter

    # -- segmentation -------------------------------------------------------------------------

    def segment(self, line: str) -> str:
        """`line` with MORPHEME_BOUNDARY between the morphs of each word."""
        _refuse_boundary_mark(line, "input")
        self._require_model()
        parts = _WHITESPACE.split(line)  # words at even indexes, the whitespace between at odd
        for index in range(0, len(parts), 2):
            if parts[index]:
                parts[index] = self.segment_word(parts[index])
                self.words += 1
        return "".join(parts)

    def segment_word(self, word: str) -> str:
        """One whitespace-free word, cut into morphs (cached per word type)."""
        segmented = self._cache.get(word)
        if segmented is None:
            if len(self._cache) >= _MAX_CACHE_ENTRIES:
                self._cache.clear()
            segmented = self._cache[word] = self._segment_word(word)
        return segmented

    def _segment_word(self, word: str) -> str:
        prefix, core, suffix = split_affixes(word)
        if not core:
            return word
        morphs, _ = self.model.viterbi_segment(self._form(core), maxlen=_MAX_MORPH_CHARS)
        pieces, start = [], 0
        for morph in morphs:  # cut the original characters; the model may see them lower-cased
            pieces.append(core[start : start + len(morph)])
            start += len(morph)
        # Digits get a boundary of their own: a number takes case suffixes like a noun ("603￭ᒥᒃ",
        # as Zemberek cuts "1990'larda"); punctuation joins the morpheme next to it unmarked.
        if prefix[-1:].isdigit():
            pieces.insert(0, prefix)
        else:
            pieces[0] = prefix + pieces[0]
        if suffix[:1].isdigit():
            pieces.append(suffix)
        else:
            pieces[-1] += suffix
        return MORPHEME_BOUNDARY.join(pieces)

    def _form(self, core: str) -> str:
        return _model_form(core) if self.lowercase else core

    def _require_model(self) -> None:
        if self.model is None:
            raise RuntimeError("the segmenter has no model: call train() or load() first")


def _read_segmentations(path: Path) -> Iterator[Tuple[int, str, Tuple[str, ...]]]:
    """(count, word, morphs) of each "count morph + morph" line, as Morfessor's reader gives."""
    with open(path, encoding="utf-8") as file:
        for number, line in enumerate(file, start=1):
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            count, _, segmentation = line.partition(" ")
            if not count.isdigit() or not segmentation:
                raise ValueError(
                    f"{path}:{number}: expected 'COUNT MORPH{_CONSTRUCTION_SEPARATOR}MORPH...', "
                    f"found {line[:80]!r}"
                )
            morphs = tuple(segmentation.split(_CONSTRUCTION_SEPARATOR))
            yield int(count), "".join(morphs), morphs


def _refuse_boundary_mark(line: str, where: str) -> None:
    if MORPHEME_BOUNDARY in line:
        raise ValueError(
            f"{where} already contains the morpheme boundary mark {MORPHEME_BOUNDARY!r} "
            f"(U+FFED) at character {line.index(MORPHEME_BOUNDARY) + 1}: {line[:80]!r}"
        )
