"""The encoder grid's report on fixed inputs: mean ± sample std per task and system, Almost
Stochastic Order against the baseline (better, worse, too few seeds), missing seeds, the
pretraining table and curves."""

import json
import statistics

import pytest

from fairseq_struct.grid.encoder_report import write_report
from fairseq_struct.grid.encoder_runs import EncoderGrid

SEEDS = (1, 2, 3, 4, 5)
ITERATIONS = 100  # ASO's bootstrap (1,000 in a report): the differences here are large
# POS word accuracy per seed: bert2d clearly above the baseline, bert_elmo clearly below.
ACCURACY = {
    ("roberta", "pretrained"): [80.0, 81.0, 79.5, 80.5, 80.2],
    ("roberta", "scratch"): [60.0, 61.0, 59.0, 60.5, 59.5],
    ("bert2d", "pretrained"): [90.0, 91.0, 89.5, 90.5, 90.2],
    ("bert2d", "scratch"): [62.0, 61.0, 63.0, 60.0, 61.5],
    ("bert_elmo", "pretrained"): [70.0, 71.0, 69.5, 70.5, 70.2],
}


@pytest.fixture
def grid(tmp_path) -> EncoderGrid:
    grid = EncoderGrid(
        pretrain_train="a.txt",
        pretrain_valid="b.txt",
        tasks_dir=tmp_path / "tasks",
        out=tmp_path / "grid",
        encoders=("roberta", "bert2d", "bert_elmo"),
        tasks=("pos",),
        seeds=SEEDS,
        max_update=200,
    )
    for (encoder, init), values in ACCURACY.items():
        for seed, value in zip(SEEDS, values):
            run = grid.run_dir(encoder, "pos", init, seed)
            run.mkdir(parents=True)
            (run / "scores.json").write_text(json.dumps({"accuracy": value}), encoding="utf-8")
            marker = {"command": "predict", "wall_seconds": 5.0}
            (run / ".predict.done.json").write_text(json.dumps(marker), encoding="utf-8")
    # bert_elmo from scratch: only seed 1 finished.
    run = grid.run_dir("bert_elmo", "pos", "scratch", 1)
    run.mkdir(parents=True)
    (run / "scores.json").write_text(json.dumps({"accuracy": 50.0}), encoding="utf-8")
    (run / ".predict.done.json").write_text(json.dumps({"command": "p", "wall_seconds": 1}))
    for encoder, accuracy in (("roberta", 30.5), ("bert2d", 33.0)):
        directory = grid.pretraining_dir(encoder)
        directory.mkdir(parents=True)
        lines = [
            f"x | INFO | valid | epoch 001 | valid on 'valid' subset | loss 5.1 | mlm_accuracy "
            f"{value} | unigram_accuracy 5.5 | num_updates {updates}"
            for updates, value in ((100, 20.0), (200, accuracy))
        ]
        (directory / "train.log").write_text("\n".join(lines) + "\n", encoding="utf-8")
        marker = {"command": "train", "wall_seconds": 120.0}
        (directory / ".train.done.json").write_text(json.dumps(marker), encoding="utf-8")
    return grid


def row(text: str, name: str) -> list:
    line = next(line for line in text.splitlines() if line.startswith(f"| {name} |"))
    return [cell.strip() for cell in line.strip("|").split("|")]


def test_task_table_means_aso_and_missing_seeds(grid):
    report = write_report(grid, ["python", "-m", "fairseq_struct.grid.encoders"], ITERATIONS)
    text = report.read_text()
    record = json.loads((grid.out / "report.json").read_text())

    values = ACCURACY["bert2d", "pretrained"]
    bert2d = row(text, "bert2d (pretrained)")
    assert bert2d[1] == f"{statistics.fmean(values):.2f} ± {statistics.stdev(values):.2f}"
    assert bert2d[2].endswith("(better)") and float(bert2d[2].split()[0]) < 0.2
    assert row(text, "roberta (pretrained)")[2] == "baseline"
    elmo = row(text, "bert_elmo (pretrained)")
    assert elmo[2].endswith("(worse)") and float(elmo[2].split()[0]) > 0.8
    # One finished seed: no ASO, the missing seeds named.
    scratch = row(text, "bert_elmo (scratch)")
    assert scratch[1:] == ["50.00", "–", "1/5 (missing: 2, 3, 4, 5)"]
    systems = {system["system"]: system for system in record["tasks"]["pos"]}
    aso = systems["bert2d (pretrained)"]["aso"]
    assert aso["eps_min"] < 0.2 < 0.8 < aso["eps_min_baseline"]
    assert "dominant" in aso["verdict"] and aso["signature"].startswith("aso|")


def test_pretraining_table_and_curves(grid):
    text = write_report(grid, ["python"], ITERATIONS).read_text()
    assert row(text, "bert2d")[:6] == ["bert2d", "pieces", "200", "33.00 %", "5.50 %", "2.00 min"]
    assert row(text, "bert_elmo")[:6] == ["bert_elmo", "words", "–", "–", "–", "–"]
    assert (grid.out / "curves.png").stat().st_size > 0
    record = json.loads((grid.out / "report.json").read_text())
    assert record["pretraining"][0]["curve"] == [[100, 20.0], [200, 30.5]]


def test_a_catalogue_task_is_reported_with_the_papers_figures_beside_it(tmp_path):
    grid = EncoderGrid(
        pretrain_train=None,
        pretrain_valid=None,
        tasks_dir=None,
        out=tmp_path / "grid",
        encoders=("roberta",),
        tasks=("germeval2014",),
        seeds=(1,),
        scratch=False,
    )
    run = grid.run_dir("roberta", "germeval2014", "pretrained", 1)
    run.mkdir(parents=True)
    (run / "scores.json").write_text(json.dumps({"f1": 61.25}), encoding="utf-8")
    (run / ".predict.done.json").write_text(json.dumps({"command": "p", "wall_seconds": 1}))
    text = write_report(grid, ["python"], ITERATIONS).read_text()
    section = text[text.index("## germeval2014") :]
    assert row(section, "roberta (pretrained)")[1] == "61.25"  # entity F1, the ner metric
    assert "  small BERT (34M), LCRF_NER + Entity-Fix: test f1 84.48" in section
    assert "  GBERT base (110M): test f1 87.98" in section
