"""How finely a corpus is cut: SentencePiece pieces per word and morphemes per word.

In a pieces file a word is a piece starting with WORD_START ("▁") and the pieces after it (a lone
MORPHEME_BOUNDARY piece is not counted); in a segmented file a word is a whitespace token, its
morphemes the parts between MORPHEME_BOUNDARY marks ("gör￭eme￭dik" has 3), the morphological
density of design.md §5.3. Punctuation-only tokens are not words unless `--count-punctuation`.
"""

import argparse
import json
import statistics
import sys
from collections import Counter
from dataclasses import asdict, dataclass
from typing import Dict, Iterable, List, Optional

from fairseq_struct.corpus_io import atomic_write_json
from fairseq_struct.pieces.markers import MORPHEME_BOUNDARY, WORD_START


@dataclass(frozen=True)
class UnitsPerWordStats:
    """Units (pieces or morphemes) per word over a corpus."""

    lines: int
    words: int
    units: int
    mean: float
    median: float
    share_multi_unit: float  # share of words with more than one unit
    histogram: Dict[int, int]  # units per word -> number of words


def is_punctuation_only(word: str) -> bool:
    """True for a token with no letter or digit once the marks are removed. Such tokens are not
    words by default: the segmenter never splits them, so they would only dilute the density."""
    return not any(char.isalnum() for char in word)


def morphemes_per_word(line: str, count_punctuation: bool = False) -> List[int]:
    """The number of morphemes of each word of a segmented line, in order."""
    counts = []
    for word in line.split():
        morphemes = [morpheme for morpheme in word.split(MORPHEME_BOUNDARY) if morpheme]
        if morphemes and (count_punctuation or not is_punctuation_only("".join(morphemes))):
            counts.append(len(morphemes))
    return counts


def pieces_per_word(line: str, count_punctuation: bool = False) -> List[int]:
    """The number of SentencePiece pieces of each word of an encoded line, in order."""
    words: List[List[str]] = []
    for piece in line.split():
        if piece == MORPHEME_BOUNDARY:
            continue
        if piece.startswith(WORD_START) or not words:
            words.append([])
        words[-1].append(piece)
    return [
        len(pieces)
        for pieces in words
        if count_punctuation or not is_punctuation_only("".join(pieces).replace(WORD_START, ""))
    ]


def morphological_density(line: str, count_punctuation: bool = False) -> Optional[float]:
    """Morphemes per word of a segmented sentence; None when it has no word."""
    counts = morphemes_per_word(line, count_punctuation)
    return sum(counts) / len(counts) if counts else None


def segmentation_stats(per_line_counts: Iterable[List[int]]) -> UnitsPerWordStats:
    """Statistics of units per word, given each line's per-word unit counts.

    Raises:
        ValueError: there is no word at all.
    """
    lines = 0
    counts: List[int] = []
    for line_counts in per_line_counts:
        lines += 1
        counts.extend(line_counts)
    if not counts:
        raise ValueError("no words to count")
    return UnitsPerWordStats(
        lines=lines,
        words=len(counts),
        units=sum(counts),
        mean=sum(counts) / len(counts),
        median=float(statistics.median(counts)),
        share_multi_unit=sum(count > 1 for count in counts) / len(counts),
        histogram=dict(sorted(Counter(counts).items())),
    )


def file_stats(path: str, unit: str, count_punctuation: bool = False) -> UnitsPerWordStats:
    """Statistics of a segmented (`unit="morphemes"`) or encoded (`unit="pieces"`) file.

    Raises:
        ValueError: an unknown unit, or a file without words (names the file).
    """
    counter = {"morphemes": morphemes_per_word, "pieces": pieces_per_word}.get(unit)
    if counter is None:
        raise ValueError(f"unknown unit {unit!r}, expected 'morphemes' or 'pieces'")
    with open(path, encoding="utf-8", newline="\n") as lines:
        try:
            return segmentation_stats(counter(line, count_punctuation) for line in lines)
        except ValueError as error:
            raise ValueError(f"{path}: {error}") from error


def format_table(rows: List[Dict[str, object]]) -> List[str]:
    """A markdown table, one row per file, then each file's histogram."""
    lines = [
        "| file | unit | lines | words | units/word mean | median | share > 1 |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        stats = row["stats"]
        lines.append(
            f"| {row['file']} | {row['unit']} | {stats['lines']} | {stats['words']} | "
            f"{stats['mean']:.3f} | {stats['median']:g} | {stats['share_multi_unit']:.3f} |"
        )
    for row in rows:
        histogram = row["stats"]["histogram"]
        counts = " ".join(f"{units}:{words}" for units, words in histogram.items())
        lines.append(f"{row['file']} ({row['unit']}/word: words) {counts}")
    return lines


def main(argv: Optional[List[str]] = None) -> None:
    parser = argparse.ArgumentParser(
        description="SentencePiece pieces per word and morphemes per word of corpus files.",
    )
    parser.add_argument(
        "--pieces",
        action="append",
        default=[],
        metavar="FILE",
        help="SentencePiece-encoded file (pieces separated by spaces); repeatable",
    )
    parser.add_argument(
        "--segmented",
        action="append",
        default=[],
        metavar="FILE",
        help=f"segmented file (morphemes joined with {MORPHEME_BOUNDARY}); repeatable",
    )
    parser.add_argument(
        "--count-punctuation",
        action="store_true",
        help="count punctuation-only tokens as words (default: they are skipped)",
    )
    parser.add_argument("--json", help="also write the statistics to this JSON file")
    args = parser.parse_args(argv)
    if not args.pieces and not args.segmented:
        parser.error("give at least one --pieces or --segmented file")

    inputs = [(path, "pieces") for path in args.pieces]
    inputs += [(path, "morphemes") for path in args.segmented]
    try:
        rows = [
            {
                "file": path,
                "unit": unit,
                "stats": asdict(file_stats(path, unit, args.count_punctuation)),
            }
            for path, unit in inputs
        ]
    except (OSError, ValueError) as error:
        sys.exit(f"error: {error}")
    for line in format_table(rows):
        print(line)
    print(json.dumps(rows, ensure_ascii=False))
    if args.json:
        atomic_write_json(args.json, rows)


if __name__ == "__main__":
    from fairseq_struct.cli_logging import configure_logging

    configure_logging()
    main()
