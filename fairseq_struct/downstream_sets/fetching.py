"""Fetch one catalogued data set: its published files (`sources`), converted (`conversions`)
into OUT/NAME/ with a report, OUT/NAME/dataset.json, of every count.

OUT/NAME/ appears whole or not at all: the conversion writes into a hidden sibling folder that
is renamed only once every file is written and every count checked.
"""

from pathlib import Path
from typing import Dict, Optional

from fairseq_struct.corpus_io import atomic_write_json, staged_directory
from fairseq_struct.downstream_sets.catalog import DataSet, HubSource
from fairseq_struct.downstream_sets.conversions import CONVERSIONS
from fairseq_struct.downstream_sets.reference_scores import REFERENCE_TABLES
from fairseq_struct.downstream_sets.sources import fetch_source, record_checksums

REPORT_FILE = "dataset.json"


def dataset_directory(out_dir: Path, dataset: DataSet) -> Path:
    return Path(out_dir) / dataset.name


def is_fetched(out_dir: Path, dataset: DataSet) -> bool:
    return (dataset_directory(out_dir, dataset) / REPORT_FILE).is_file()


def _source_record(dataset: DataSet, checksums: Dict[str, str]) -> Dict[str, object]:
    source = dataset.source
    record: Dict[str, object] = {"homepage": source.homepage}
    if isinstance(source, HubSource):
        record.update(hub_id=source.repo_id, revision=source.revision)
        files = {name: {"sha256": checksums[name]} for name in source.filenames}
    else:
        files = {
            file.filename: {
                "url": file.url,
                "sha256": checksums[file.filename],
                "checksum": "pinned by the catalogue" if file.sha256 else "recorded at first use",
            }
            for file in source.files
        }
    record["files"] = files
    return record


def fetch(dataset: DataSet, out_dir: Path, local: Optional[Path] = None) -> Dict[str, object]:
    """Fetch, convert and report `dataset` into OUT_DIR/NAME; returns the report.

    Raises:
        DownloadError: a download failed or a checksum differs (naming file and expectation).
        DownstreamDataError: a published file cannot be read (naming its line) or has another
            size than the catalogue's.
    """
    files = fetch_source(dataset.source, out_dir, local)
    with staged_directory(dataset_directory(out_dir, dataset)) as staging:
        splits = CONVERSIONS[dataset.conversion](dataset, files, staging)
        checksums = record_checksums(dataset.source, files)
        report = {
            "name": dataset.name,
            "task": dataset.task,
            "title": dataset.title,
            "licence": dataset.licence,
            "serves": list(dataset.serves),
            "preprocessing": dataset.preprocessing,
            "source": _source_record(dataset, checksums),
            "splits": splits,
            "reference_tables": [
                f"{table.paper}, {table.table}" for table in REFERENCE_TABLES.get(dataset.name, [])
            ],
        }
        atomic_write_json(staging / REPORT_FILE, report)
    return report
