"""`fairseq-struct datasets`: list the encoder papers' downstream data sets, show one with the
scores its papers report, and fetch them into the files `prepare-downstream` and
`grid-encoders` read (docs/finetuning.md, "The papers' data sets").

    fairseq-struct datasets list
    fairseq-struct datasets show ler-cg
    fairseq-struct datasets fetch bert2d-paper --out datasets/
    fairseq-struct datasets fetch turkish-sentiment --out datasets/ --from ~/hub/winvoker
"""

import argparse
import sys
from pathlib import Path
from typing import Iterable, List, Optional, Sequence

from fairseq_struct.commands import program_name
from fairseq_struct.downstream_sets.catalog import (
    COLLECTIONS,
    DATASETS,
    DataSet,
    HubSource,
    UnknownDataSetError,
    resolve,
)
from fairseq_struct.downstream_sets.reference_scores import reference_lines


def _sizes(dataset: DataSet) -> str:
    return ", ".join(f"{split} {count:,}" for split, count in dataset.expected.items())


def _source_line(dataset: DataSet) -> str:
    source = dataset.source
    if isinstance(source, HubSource):
        return f"Hugging Face hub {source.repo_id} ({', '.join(source.filenames)})"
    return source.homepage


def list_lines() -> List[str]:
    lines = []
    for dataset in DATASETS.values():
        lines.append(f"{dataset.name} [{dataset.task}]: {dataset.title}")
        lines.append(f"  {_sizes(dataset)} {dataset.unit}; {dataset.licence}")
    lines += ["", "collections:"]
    lines += [f"  {name}: {' '.join(members)}" for name, members in COLLECTIONS.items()]
    return lines


def show_lines(dataset: DataSet) -> List[str]:
    source = dataset.source
    lines = [
        f"{dataset.name}: {dataset.title}",
        f"task: {dataset.task}",
        f"source: {_source_line(dataset)}",
    ]
    if isinstance(source, HubSource):
        lines.append(f"  revision {source.revision}; sha256 recorded at first download")
    else:
        for file in source.files:
            check = f"sha256 {file.sha256}" if file.sha256 else "sha256 recorded at first download"
            lines.append(f"  {file.url} ({check})")
    lines += [
        f"licence: {dataset.licence}",
        f"published sizes: {_sizes(dataset)} {dataset.unit}",
        "splits: " + ", ".join(f"{split} <- {name}" for split, name in dataset.splits.items()),
        f"preprocessing: {dataset.preprocessing}",
        *(f"serves: {paper}" for paper in dataset.serves),
    ]
    references = reference_lines(dataset.name)
    if references:
        lines += ["reported:", *(f"  {line}" for line in references)]
    return lines


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=program_name("fairseq_struct.downstream_sets.cli"),
        description="The encoder papers' downstream data sets: list them, show one, or fetch "
        "them as the files prepare-downstream and grid-encoders read.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("list", help="every data set and collection")
    show = commands.add_parser("show", help="one data set: source, licence, the papers' scores")
    show.add_argument("name")
    fetch = commands.add_parser("fetch", help="download, verify and convert data sets")
    fetch.add_argument("names", nargs="+", metavar="NAME", help="data sets or collections")
    fetch.add_argument("--out", required=True, type=Path, help="writes OUT/NAME/ per data set")
    fetch.add_argument(
        "--from",
        dest="local",
        type=Path,
        help="a local copy of the published files (a clone, a hub snapshot, files saved by "
        "hand) to take them from instead of the network",
    )
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "list":
        _print(list_lines())
        return 0
    try:
        datasets = resolve([args.name] if args.command == "show" else args.names)
    except UnknownDataSetError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if args.command == "show":
        _print(show_lines(datasets[0]))
        return 0
    from fairseq_struct.corpora.download import DownloadError
    from fairseq_struct.downstream.readers import DownstreamDataError
    from fairseq_struct.downstream_sets.fetching import dataset_directory, fetch

    for dataset in datasets:
        try:
            report = fetch(dataset, args.out, args.local)
        except (DownloadError, DownstreamDataError) as error:
            print(f"error: {dataset.name}: {error}", file=sys.stderr)
            return 1
        sizes = ", ".join(
            f"{split} {_split_size(record)}" for split, record in report["splits"].items()
        )
        print(f"{dataset.name}: {dataset_directory(args.out, dataset)} ({sizes})")
    return 0


def _split_size(record: dict) -> str:
    for unit in ("sentences", "questions"):
        if unit in record:
            return f"{record[unit]:,} {unit}"
    written = record.get("written", {})
    return " + ".join(f"{count:,} {label}" for label, count in written.items())


def _print(lines: Iterable[str]) -> None:
    sys.stdout.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    from fairseq_struct.cli_logging import configure_logging

    configure_logging()
    sys.exit(main())
