"""The catalogue itself: every entry is complete and consistent, collections name real entries,
and the papers' figures are those printed (checked against a few hand-copied cells)."""

import re

import pytest

from fairseq_struct.downstream.layout import TASKS
from fairseq_struct.downstream_sets.catalog import (
    COLLECTIONS,
    DATASETS,
    LER_COARSE_CLASSES,
    HubSource,
    UnknownDataSetError,
    resolve,
)
from fairseq_struct.downstream_sets.conversions import CONVERSIONS
from fairseq_struct.downstream_sets.reference_scores import REFERENCE_TABLES, reference_lines

SHA256 = re.compile(r"[0-9a-f]{64}")


@pytest.mark.parametrize("name", list(DATASETS))
def test_every_entry_is_complete(name):
    dataset = DATASETS[name]
    assert dataset.task in TASKS and dataset.conversion in CONVERSIONS
    published = (
        dataset.source.filenames
        if isinstance(dataset.source, HubSource)
        else [file.filename for file in dataset.source.files]
    )
    assert sorted(dataset.splits.values()) == sorted(published)
    assert set(dataset.expected) == set(dataset.splits)
    assert "train" in dataset.splits and "test" in dataset.splits
    assert dataset.licence and dataset.serves and dataset.source.homepage.startswith("https://")
    if not isinstance(dataset.source, HubSource):
        for file in dataset.source.files:
            assert file.url.startswith("https://")
            assert file.url.endswith(file.filename) or "drive.google.com" in file.url
            assert file.sha256 is None or SHA256.fullmatch(file.sha256)


def test_github_files_are_pinned_to_a_commit_or_release():
    for dataset in DATASETS.values():
        if isinstance(dataset.source, HubSource):
            continue
        for file in dataset.source.files:
            if "raw.githubusercontent.com" in file.url:
                revision = file.url.split("/")[5]
                assert re.fullmatch(r"[0-9a-f]{40}|r2\.\d+", revision), file.url


def test_ler_coarse_classes_are_the_seven_over_nineteen():
    assert len(LER_COARSE_CLASSES) == 19
    assert sorted(set(LER_COARSE_CLASSES.values())) == [
        "LIT",
        "LOC",
        "NRM",
        "ORG",
        "PER",
        "REG",
        "RS",
    ]


def test_collections_and_resolution():
    assert all(member in DATASETS for members in COLLECTIONS.values() for member in members)
    assert [d.name for d in resolve(["tquad", "bert2d-paper"])] == [
        "tquad",
        "turkish-sentiment",
        "turkish-wiki-ner",
        "ud-turkish-imst",
        "ud-turkish-boun",
    ]
    assert len(resolve(["small-bert-paper"])) == 5
    with pytest.raises(
        UnknownDataSetError, match=r"unknown data set 'ler'; .* ler-cg, .*bert2d-paper"
    ):
        resolve(["ler"])


def test_every_paper_set_has_its_papers_figures():
    for members in COLLECTIONS.values():
        for name in members:
            assert REFERENCE_TABLES[name], name
    for tables in REFERENCE_TABLES.values():
        for table in tables:
            assert all(len(values) == len(table.columns) for _, values in table.rows)


def test_reference_figures_are_those_printed():
    lines = reference_lines("turkish-wiki-ner")
    assert "  BERT2D M=1 128k RWM: valid f1 77.39, test f1 78.22" in lines  # Table 4
    assert "  mBERT: valid f1 76.53, test f1 76.13" in lines
    assert "  BERT2D M=3 32k WWM: test exact_match 61.86, test f1 79.69" in reference_lines("tquad")
    assert "  small BERT (34M), LCRF_NER + Entity-Fix: test f1 84.48" in reference_lines(
        "germeval2014"
    )  # Table 8
    assert "  GBERT base (110M): test f1 87.98" in reference_lines("germeval2014")  # Table 11
    assert "  small BERT (34M), CSE: test f1 80.48" in reference_lines("arendt")
    assert "  BERT-ELMo, 10 epochs: test exact_match 34.40" in reference_lines("tquad")
