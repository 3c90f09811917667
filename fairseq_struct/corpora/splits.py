"""The paper's data splits: seeded random subsets of a corpus, each cut into train/valid/test.

    fairseq-struct splits --src raw/clean.en --tgt raw/clean.tr \\
        --out-dir raw/opensubtitles --preset opensubtitles --seed 1

writes OUT_DIR/NAME/{train,valid,test}.{SRC,TGT} per subset and OUT_DIR/splits.json. Subsets are
nested and every pair keeps its role across them (1.4m-train is inside 5m-train, 1.4m-test inside
5m-test), so no subset trains on a pair another tests on. `--subset all=rest,3000,3000` carves
valid and test sets out of a corpus that has none.
"""

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from fairseq_struct.commands import program_name
from fairseq_struct.corpora.clean_corpus import atomic_outputs, language_of
from fairseq_struct.corpus_io import CorpusError, atomic_write_json, count_lines
from fairseq_struct.progress import StageProgress

PathLike = Union[str, Path]
PARTS = ("train", "valid", "test")
_NOT_IN_SUBSET = -1
_BLOCK = 1 << 20

# Table 3 of the paper. The full corpus is cut 80/10/10 (28,694,211 / 3,586,776 / 3,586,777).
PRESETS: Dict[str, List[str]] = {
    "opensubtitles": [
        "1.4m=1300000,65000,65000",
        "5m=4000000,500000,500000",
        "36m=rest,10%,10%",
    ],
}


@dataclass(frozen=True)
class SubsetSpec:
    """A subset as asked for: each size a count, `N%` of the corpus, or `rest` (train only)."""

    name: str
    train: str
    valid: str
    test: str

    @classmethod
    def parse(cls, text: str) -> "SubsetSpec":
        name, _, sizes = text.partition("=")
        parts = sizes.split(",")
        if not name or len(parts) != 3 or "rest" in parts[1:]:
            raise ValueError(
                f"subset {text!r}: expected NAME=TRAIN,VALID,TEST, e.g. 1.4m=1300000,65000,65000 "
                "(a size may be N%; train may be 'rest')"
            )
        return cls(name, *parts)

    def resolve(self, corpus_pairs: int) -> Tuple[int, int, int]:
        """(train, valid, test) pair counts for a corpus of `corpus_pairs` pairs."""
        valid, test = (_count(self, size, corpus_pairs) for size in (self.valid, self.test))
        if self.train == "rest":
            return corpus_pairs - valid - test, valid, test
        return _count(self, self.train, corpus_pairs), valid, test


def _count(spec: SubsetSpec, size: str, corpus_pairs: int) -> int:
    try:
        if size.endswith("%"):
            return round(corpus_pairs * float(size[:-1]) / 100)
        count = int(size)
    except ValueError:
        raise ValueError(f"subset {spec.name}: {size!r} is not a count, N% or rest") from None
    if count < 0:
        raise ValueError(f"subset {spec.name}: negative size {count}")
    return count


def assign_parts(
    corpus_pairs: int, subsets: Sequence[SubsetSpec], seed: int
) -> Dict[str, np.ndarray]:
    """For each subset, the part of every corpus pair: an index into PARTS, or -1 (not in it).

    Subsets are nested in order of size; raises ValueError when they cannot be (a part that
    shrinks as the subset grows) or when a subset asks for more pairs than the corpus has.
    """
    resolved = sorted(
        ((spec.name, spec.resolve(corpus_pairs)) for spec in subsets), key=lambda s: sum(s[1])
    )
    order = np.random.Generator(np.random.PCG64(seed)).permutation(corpus_pairs)
    labels: Dict[str, np.ndarray] = {}
    previous = np.full(corpus_pairs, _NOT_IN_SUBSET, dtype=np.int8)
    previous_sizes, previous_name = (0, 0, 0), None
    for name, sizes in resolved:
        total = sum(sizes)
        if min(sizes) < 0 or total > corpus_pairs:
            raise ValueError(
                f"subset {name}: {dict(zip(PARTS, sizes))} needs {total} pairs but the corpus "
                f"has {corpus_pairs}"
            )
        grown = [now - before for now, before in zip(sizes, previous_sizes)]
        if min(grown) < 0:
            raise ValueError(
                f"subset {name} {dict(zip(PARTS, sizes))} cannot contain subset {previous_name} "
                f"{dict(zip(PARTS, previous_sizes))}: every part must grow for nested subsets"
            )
        added = order[sum(previous_sizes) : total]
        current = previous.copy()
        # Test first, then valid, then train: each block of the permutation is a uniform sample.
        test_end = grown[2]
        valid_end = test_end + grown[1]
        current[added[:test_end]] = PARTS.index("test")
        current[added[test_end:valid_end]] = PARTS.index("valid")
        current[added[valid_end:]] = PARTS.index("train")
        labels[name] = current
        previous, previous_sizes, previous_name = current, sizes, name
    return labels


def write_splits(
    source_path: PathLike,
    target_path: PathLike,
    out_dir: PathLike,
    subsets: Sequence[SubsetSpec],
    seed: int,
    source_lang: str,
    target_lang: str,
) -> Dict[str, object]:
    """Write every subset's parts; returns the report also written to OUT_DIR/splits.json."""
    corpus_pairs = count_lines(source_path)
    target_pairs = count_lines(target_path)
    if corpus_pairs != target_pairs:
        raise CorpusError(
            f"{source_path} has {corpus_pairs} lines but {target_path} has {target_pairs}: the "
            "files of a parallel corpus must be line-aligned"
        )
    labels = assign_parts(corpus_pairs, subsets, seed)
    out_dir = Path(out_dir)
    outputs = [
        out_dir / name / f"{part}.{lang}"
        for name in labels
        for part in PARTS
        for lang in (source_lang, target_lang)
    ]
    with open(source_path, "rb") as source_file, open(target_path, "rb") as target_file:
        with atomic_outputs(outputs, binary=True) as files:
            # files[6 * subset + 2 * part + side], in the order `outputs` lists them
            columns = np.stack(list(labels.values()), axis=1)
            pairs = zip(source_file, target_file)
            # Labels as Python lists a block at a time: indexing numpy per line is slow.
            with StageProgress("splitting", total=corpus_pairs, unit="pairs") as progress:
                for start in range(0, corpus_pairs, _BLOCK):
                    block = columns[start : start + _BLOCK].tolist()
                    for row, (source, target) in zip(block, pairs):
                        source = source.rstrip(b"\r\n") + b"\n"
                        target = target.rstrip(b"\r\n") + b"\n"
                        for subset, part in enumerate(row):
                            if part != _NOT_IN_SUBSET:
                                files[6 * subset + 2 * part].write(source)
                                files[6 * subset + 2 * part + 1].write(target)
                    progress.update(len(block))
    report = {
        "source": str(source_path),
        "target": str(target_path),
        "corpus_pairs": corpus_pairs,
        "seed": seed,
        "nested": True,
        "subsets": {
            name: {part: int((column == i).sum()) for i, part in enumerate(PARTS)}
            for name, column in labels.items()
        },
    }
    atomic_write_json(out_dir / "splits.json", report)
    return report


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog=program_name("fairseq_struct.corpora.splits"),
        description="Seeded, nested random subsets of a parallel corpus, each with train, valid "
        "and test parts (the paper's OpenSubtitles 1.4m/5m/36m).",
    )
    parser.add_argument("--src", required=True, help="source-side file, one sentence a line")
    parser.add_argument("--tgt", required=True, help="target-side file, line-aligned with --src")
    parser.add_argument("--out-dir", required=True, help="writes OUT_DIR/NAME/PART.LANG")
    parser.add_argument("--src-lang", help="source suffix (default: the suffix of --src)")
    parser.add_argument("--tgt-lang", help="target suffix (default: the suffix of --tgt)")
    parser.add_argument(
        "--subset",
        action="append",
        default=[],
        metavar="NAME=TRAIN,VALID,TEST",
        help="a subset to write (repeatable); sizes are counts, N%% of the corpus, or 'rest' "
        "for train, e.g. all=rest,3000,3000",
    )
    parser.add_argument(
        "--preset",
        choices=sorted(PRESETS),
        # argparse formats help with %: the presets' percentages are escaped.
        help="the paper's subsets: opensubtitles = "
        + " ".join(PRESETS["opensubtitles"]).replace("%", "%%"),
    )
    parser.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    args = parser.parse_args(argv)
    texts = args.subset + (PRESETS[args.preset] if args.preset else [])
    if not texts:
        parser.error("give --preset or at least one --subset")
    try:
        args.subsets = [SubsetSpec.parse(text) for text in texts]
    except ValueError as error:
        parser.error(str(error))
    if len({spec.name for spec in args.subsets}) != len(args.subsets):
        parser.error("subset names must be distinct")
    args.src_lang = args.src_lang or language_of(args.src)
    args.tgt_lang = args.tgt_lang or language_of(args.tgt)
    if not args.src_lang or not args.tgt_lang or args.src_lang == args.tgt_lang:
        parser.error(
            "cannot tell the languages apart from the file names; give --src-lang and " "--tgt-lang"
        )
    return args


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    try:
        report = write_splits(
            args.src, args.tgt, args.out_dir, args.subsets, args.seed, args.src_lang, args.tgt_lang
        )
    except (CorpusError, ValueError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    for name, parts in report["subsets"].items():
        counts = ", ".join(f"{part} {n}" for part, n in parts.items())
        print(f"{Path(args.out_dir) / name}: {counts}")
    return 0


if __name__ == "__main__":
    from fairseq_struct.cli_logging import configure_logging

    configure_logging()
    sys.exit(main())
