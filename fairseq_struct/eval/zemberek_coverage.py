"""How much of a Turkish text Zemberek recognises: the share of word tokens it can analyse.

A word token is a whitespace token without its leading and trailing punctuation (punctuation-only
tokens are counted apart); it is recognised when an analysis has a root from Zemberek's lexicon,
not the unknown item or a runtime guess (numbers, unknown names before an apostrophe).
"""

from __future__ import annotations

import argparse
import json
import string
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable, Optional

from fairseq_struct.morph.zemberek.loading import load_morphology

PUNCTUATION = string.punctuation + "…“”‘’«»–—"


@dataclass
class Coverage:
    word_tokens: int = 0
    recognised_tokens: int = 0
    punctuation_tokens: int = 0
    word_types: int = 0
    unknown_types: int = 0
    # most frequent unrecognised words first, as (word, count)
    top_unknown: list[tuple[str, int]] = field(default_factory=list)

    @property
    def share(self) -> float:
        return self.recognised_tokens / self.word_tokens if self.word_tokens else 0.0


def is_recognised(morphology: Any, word: str) -> bool:
    analyses = morphology.analyze(word).analysis_results
    return any(not analysis.is_unknown() and not analysis.is_runtime() for analysis in analyses)


def measure_coverage(
    lines: Iterable[str], morphology: Optional[Any] = None, top_unknown: int = 20
) -> Coverage:
    """Count word tokens of ``lines`` and how many of them Zemberek recognises.

    Each word type is analysed once, so the cost grows with the vocabulary, not the text.
    """
    word_counts: Counter[str] = Counter()
    coverage = Coverage()
    for line in lines:
        for token in line.split():
            word = token.strip(PUNCTUATION)
            if word:
                word_counts[word] += 1
            else:
                coverage.punctuation_tokens += 1
    morphology = morphology if morphology is not None else load_morphology()
    unknown: Counter[str] = Counter()
    for word, count in word_counts.items():
        coverage.word_tokens += count
        if is_recognised(morphology, word):
            coverage.recognised_tokens += count
        else:
            unknown[word] = count
    coverage.word_types = len(word_counts)
    coverage.unknown_types = len(unknown)
    coverage.top_unknown = unknown.most_common(top_unknown)
    return coverage


def main(argv: Optional[list[str]] = None) -> None:
    parser = argparse.ArgumentParser(
        description="Share of the word tokens of a Turkish text that Zemberek recognises "
        "(punctuation-only tokens are excluded and counted separately)."
    )
    parser.add_argument("file", help="UTF-8 text, one sentence a line")
    parser.add_argument(
        "--top-unknown", type=int, default=20, help="how many unrecognised words to list"
    )
    args = parser.parse_args(argv)
    with open(args.file, encoding="utf-8") as text:
        coverage = measure_coverage(text, top_unknown=args.top_unknown)
    print(
        f"{args.file}: Zemberek recognises {coverage.share:.2%} of {coverage.word_tokens} word "
        f"tokens ({coverage.unknown_types} of {coverage.word_types} word types unknown; "
        f"{coverage.punctuation_tokens} punctuation tokens excluded)"
    )
    record = {"file": args.file, "share": round(coverage.share, 6), **asdict(coverage)}
    print(json.dumps(record, ensure_ascii=False))


if __name__ == "__main__":
    from fairseq_struct.cli_logging import configure_logging

    configure_logging()
    main()
