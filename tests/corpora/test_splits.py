"""Seeded, nested subsets with train/valid/test parts (the paper's OpenSubtitles splits)."""

import json
import logging
from pathlib import Path

import numpy as np
import pytest

from fairseq_struct.corpora.splits import PARTS, SubsetSpec, assign_parts, main

SMALL, LARGE = SubsetSpec.parse("small=60,10,10"), SubsetSpec.parse("large=rest,20%,20%")


def members(labels: np.ndarray, part: str) -> set:
    return set(np.flatnonzero(labels == PARTS.index(part)))


def test_sizes_are_counts_percentages_or_rest():
    assert LARGE.resolve(1000) == (600, 200, 200)
    assert SMALL.resolve(1000) == (60, 10, 10)
    with pytest.raises(ValueError, match="NAME=TRAIN,VALID,TEST"):
        SubsetSpec.parse("bad=1,rest,1")


def test_smaller_subset_is_nested_in_the_larger_one_part_by_part():
    labels = assign_parts(1000, [LARGE, SMALL], seed=3)
    for part in PARTS:
        assert members(labels["small"], part) <= members(labels["large"], part)
    assert [len(members(labels["small"], p)) for p in PARTS] == [60, 10, 10]
    assert [len(members(labels["large"], p)) for p in PARTS] == [600, 200, 200]
    assert not members(labels["large"], "train") & members(labels["small"], "test")


def test_parts_are_disjoint_and_cover_the_whole_corpus_with_rest():
    labels = assign_parts(1000, [LARGE], seed=3)["large"]
    assert (labels >= 0).all()
    assert sum(len(members(labels, p)) for p in PARTS) == 1000


def test_same_seed_same_split_other_seed_other_split():
    first = assign_parts(500, [SMALL], seed=1)["small"]
    assert (assign_parts(500, [SMALL], seed=1)["small"] == first).all()
    assert (assign_parts(500, [SMALL], seed=2)["small"] != first).any()


def test_subset_sample_is_spread_over_the_corpus_not_its_head():
    labels = assign_parts(10_000, [SubsetSpec.parse("s=1000,0,0")], seed=0)["s"]
    chosen = np.flatnonzero(labels >= 0)
    assert chosen.min() < 1000 and chosen.max() > 9000


def test_subsets_that_cannot_nest_or_do_not_fit_are_refused():
    with pytest.raises(ValueError, match="every part must grow"):
        assign_parts(1000, [SubsetSpec.parse("a=10,50,10"), SubsetSpec.parse("b=500,20,20")], 1)
    with pytest.raises(ValueError, match="needs 1100 pairs but the corpus has 1000"):
        assign_parts(1000, [SubsetSpec.parse("a=1000,50,50")], 1)


def test_cli_writes_aligned_files_per_subset_and_a_report(tmp_path: Path):
    source, target = tmp_path / "c.en", tmp_path / "c.tr"
    source.write_text("".join(f"en {i}\n" for i in range(200)), encoding="utf-8")
    target.write_text("".join(f"tr {i}" + "\n" * (i < 199) for i in range(200)), encoding="utf-8")
    out = tmp_path / "splits"
    argv = ["--src", str(source), "--tgt", str(target), "--out-dir", str(out), "--seed", "7"]
    assert main(argv + ["--subset", "all=rest,10%,10%", "--subset", "few=50,5,5"]) == 0
    report = json.loads((out / "splits.json").read_text())
    assert report["subsets"] == {
        "few": {"train": 50, "valid": 5, "test": 5},
        "all": {"train": 160, "valid": 20, "test": 20},
    }
    seen = []
    for part in PARTS:
        en = (out / "all" / f"{part}.en").read_text().splitlines()
        tr = (out / "all" / f"{part}.tr").read_text().splitlines()
        assert [line.split()[1] for line in en] == [line.split()[1] for line in tr]
        assert set((out / "few" / f"{part}.en").read_text().splitlines()) <= set(en)
        seen += en
    assert sorted(seen) == sorted(f"en {i}" for i in range(200))


def test_progress_is_reported_in_pairs_with_the_total(tmp_path: Path, caplog):
    caplog.set_level(logging.INFO, logger="fairseq_struct.progress")
    source, target = tmp_path / "c.en", tmp_path / "c.tr"
    source.write_text("".join(f"en {i}\n" for i in range(30)), encoding="utf-8")
    target.write_text("".join(f"tr {i}\n" for i in range(30)), encoding="utf-8")
    argv = ["--src", str(source), "--tgt", str(target), "--out-dir", str(tmp_path / "out")]
    assert main(argv + ["--subset", "all=rest,3,3"]) == 0
    assert [m for m in caplog.messages if m.startswith("splitting: 30/30 pairs, ")], caplog.messages


def test_help_lists_the_presets(capsys):
    # The preset sizes hold '%', which argparse's help formatting reads as a format character.
    with pytest.raises(SystemExit) as stop:
        main(["--help"])
    assert stop.value.code == 0
    assert "36m=rest,10%,10%" in capsys.readouterr().out
