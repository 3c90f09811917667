"""The catalogue's German NER sets, converted from fixtures in their published layouts (GermEval
2014, LER fine and coarse, Arendt, Sturm), are what `prepare-downstream ner` takes: each one
prepared in the German pretraining units of the suite (conftest's german_pieces), with the entity
types of its own classes."""

import dataclasses
import json

import pytest
from conftest import run_tool, venv_tool
from fixture_sets import FIXTURE_SIZES, FIXTURES

from fairseq_struct.downstream_sets.catalog import DATASETS, SourceFile, UrlSource
from fairseq_struct.downstream_sets.fetching import fetch
from fairseq_struct.tagging.iob import split_tag

# The entity types each converted fixture has (LER coarse: its fine types mapped).
TYPES = {
    "germeval2014": {"ORGpart", "PER", "LOCderiv", "LOC"},
    "ler-fg": {"GRT", "GS", "RR", "LD", "ST", "UN", "RS", "LIT", "VT"},
    "ler-cg": {"ORG", "NRM", "PER", "LOC", "RS", "LIT", "REG"},
    "arendt": {"person", "place", "ethnicity", "organization"},
    "sturm": {"pers", "place", "date"},
}


def local_copy(name: str):
    """Catalogue entry `name` with the fixtures' sizes, fetched from a local copy of its files."""
    dataset = DATASETS[name]
    files = tuple(SourceFile(f.url, f.filename) for f in dataset.source.files)  # no pinned hash
    source = UrlSource(dataset.source.key, files, dataset.source.homepage)
    return dataclasses.replace(dataset, source=source, expected=FIXTURE_SIZES[name])


@pytest.mark.parametrize("name", TYPES)
def test_german_sets_are_prepared_for_fine_tuning(name, german_pieces, tmp_path):
    dataset = local_copy(name)
    fetch(dataset, tmp_path, local=FIXTURES / dataset.source.key)
    converted = tmp_path / name
    run_tool(
        [venv_tool("python"), "-m", "fairseq_struct.downstream.prepare", "ner",
         "--pretraining-data", str(german_pieces),
         *(arg for split in ("train", "valid", "test")
           for arg in (f"--{split}", str(converted / f"{split}.conll"))),
         "--out-dir", str(tmp_path / "data")],
        cwd=tmp_path,
    )  # fmt: skip
    report = json.loads((tmp_path / "data" / "finetune.json").read_text(encoding="utf-8"))
    assert {split_tag(label)[1] for label in report["labels"]} == {""} | TYPES[name]
    for split, sentences in FIXTURE_SIZES[name].items():
        assert report["splits"][split]["sentences"] == sentences
