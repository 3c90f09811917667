"""The translation grid's report on fixed inputs: table values (mean ± sample std over seeds),
significance marks against the baseline, a missing seed, the density table, curves, commands."""

import json
import statistics
from dataclasses import asdict

import pytest

from fairseq_struct.eval.score import brevity_penalty_and_ratio, corpus_scores
from fairseq_struct.grid.curves import best_update
from fairseq_struct.grid.translation_report import write_report
from fairseq_struct.grid.translation_runs import System, TranslationGrid

REFERENCES = [
    "Kitabı okudum.",
    "Evlerimizden çıktık.",
    "Okula gidiyorlar.",
    "Yarın geleceğim.",
    "Çocuklar bahçede oynuyor.",
    "Bu kitabı sevmedim.",
] * 5  # 30 sentences: enough for the bootstrap to call a large difference significant
SEGMENTED = [
    "Kitab￭ı oku￭du￭m.",
    "Ev￭ler￭imiz￭den çık￭tı￭k.",
    "Okul￭a gid￭iyor￭lar.",
    "Yarın gel￭eceğ￭im.",
    "Çocuk￭lar bahçe￭de oyn￭uyor.",
    "Bu kitab￭ı sev￭me￭di￭m.",
] * 5
BASELINE = System("bpe", "transformer_relpos")
BETTER = System("morph", "transformer_relpos")  # the references themselves
WORSE = System("bpe", "tp_transformer")  # one word per sentence
SAME = System("morph", "tp_transformer")  # the baseline's hypotheses


def _baseline_hypothesis(line: str, seed: int) -> str:
    words = line.split()
    return " ".join(words[:-1] + (["x"] if seed == 1 else ["y", "z"]))


HYPOTHESES = {
    BASELINE: _baseline_hypothesis,
    BETTER: lambda line, seed: line,
    WORSE: lambda line, seed: line.split()[0],
    SAME: _baseline_hypothesis,
}


def write_evaluation(run, name: str, hypotheses, selection=None) -> dict:
    """An evaluate step's output (eval/ or eval-<rule>/, its marker); the scores."""
    out = run / ("eval" if name == "evaluate" else name.replace("evaluate", "eval", 1))
    out.mkdir(parents=True)
    (out / "hyp.txt").write_text("\n".join(hypotheses) + "\n", encoding="utf-8")
    computed = corpus_scores(hypotheses, REFERENCES)
    record = {"scores": {name: asdict(score) for name, score in computed.items()}}
    (out / "scores.json").write_text(json.dumps(record), encoding="utf-8")
    if selection is not None:
        (out / "selection.json").write_text(json.dumps(selection), encoding="utf-8")
    marker = {"command": f"{name} {run.name}", "wall_seconds": 30.0}
    (run / f".{name}.done.json").write_text(json.dumps(marker), encoding="utf-8")
    return {name: score.score for name, score in computed.items()}


def write_run(grid: TranslationGrid, system: System, seed: int, curve) -> dict:
    run = grid.run_dir(system, seed)
    scores = write_evaluation(
        run, "evaluate", [HYPOTHESES[system](line, seed) for line in REFERENCES]
    )
    log = [
        f"2026-11-25 10:00:00 | INFO | valid | epoch 00{i} | valid on 'valid' subset | loss 3.1 | "
        f"nll_loss {4 - i / 4} | bleu {bleu} | wps 100 | num_updates {updates} | best_bleu {bleu}"
        for i, (updates, bleu) in enumerate(curve, start=1)
    ]
    (run / "train.log").write_text("\n".join(log) + "\n", encoding="utf-8")
    marker = {"command": f"train {system.name} {seed}", "wall_seconds": 600.0}
    (run / ".train.done.json").write_text(json.dumps(marker), encoding="utf-8")
    return scores


def build_grid(out, systems=(BASELINE, BETTER, WORSE, SAME), **settings) -> tuple:
    """A grid of two seeds whose runs write HYPOTHESES (WORSE's seed 2 missing)."""
    grid = TranslationGrid(
        train="raw/train",
        valid="raw/valid",
        test="raw/test",
        tgt_lang="tr",
        out=out,
        seeds=(1, 2),
        systems=systems,
        max_update=200,
        **settings,
    )
    for mode in ("bpe", "morph"):
        data = grid.data_dir(mode)
        data.mkdir(parents=True)
        (data / "test.raw.tr").write_text("\n".join(REFERENCES) + "\n", encoding="utf-8")
        (data / "test.sp.tr").write_text(
            "\n".join("▁" + " ▁".join(line.split()) for line in REFERENCES) + "\n",
            encoding="utf-8",
        )
    (grid.data_dir("morph") / "test.seg.tr").write_text("\n".join(SEGMENTED) + "\n")
    scores = {}
    for system in grid.systems:
        for seed in grid.seeds:
            if system == WORSE and seed == 2:
                continue  # a seed that did not finish
            scores[system, seed] = write_run(grid, system, seed, [(100, 5.0), (200, 7.5)])
    return grid, scores


@pytest.fixture
def grid_dir(tmp_path) -> tuple:
    return build_grid(tmp_path / "grid")


def table_row(report: str, system: System) -> str:
    return next(
        line
        for line in report.splitlines()
        if line.startswith(f"| {system.arch}") and f"| {system.mode} |" in line
    )


def test_table_has_mean_and_sample_std_over_seeds_and_marks_significance(grid_dir):
    grid, scores = grid_dir
    report = write_report(grid, ["python", "-m", "fairseq_struct.grid.translation"])
    text = report.read_text(encoding="utf-8")
    record = json.loads((grid.out / "report.json").read_text(encoding="utf-8"))

    baseline_bleu = [scores[BASELINE, seed]["BLEU"] for seed in (1, 2)]
    expected = f"{statistics.fmean(baseline_bleu):.2f} ± {statistics.stdev(baseline_bleu):.2f}"
    assert table_row(text, BASELINE).split(" | ")[2] == expected
    assert "(baseline)" in table_row(text, BASELINE)
    # The references themselves: significantly better on both metrics, for both seeds.
    better = table_row(text, BETTER)
    assert "100.00 ± 0.00 (p 0.001)*" in better
    better_record = next(s for s in record["systems"] if s["name"] == BETTER.name)
    assert set(better_record["significance"]["BLEU"]["p_values"]) == {"1", "2"}
    # One word per sentence: significantly worse, marked †; its seed 2 is missing.
    worse = table_row(text, WORSE)
    assert f"{scores[WORSE, 1]['BLEU']:.2f} (p 0.001)†" in worse
    assert "| 1/2 (missing: 2) |" in worse
    # The baseline's own hypotheses: p = 1, no mark.
    assert "(p 1.000) |" in table_row(text, SAME)
    assert "10.0 min" in table_row(text, BASELINE)
    assert "| 200 |" in table_row(text, BASELINE)


def test_seeds_significant_in_opposite_directions_are_not_marked(tmp_path, monkeypatch):
    # Seed 1 the references (significantly better), seed 2 one word (significantly worse).
    monkeypatch.setitem(
        HYPOTHESES, BETTER, lambda line, seed: line if seed == 1 else line.split()[0]
    )
    grid, scores = build_grid(tmp_path / "grid", systems=(BASELINE, BETTER))
    text = write_report(grid, ["python"]).read_text(encoding="utf-8")
    record = json.loads((grid.out / "report.json").read_text(encoding="utf-8"))

    bleu = [scores[BETTER, seed]["BLEU"] for seed in (1, 2)]
    cell = f"{statistics.fmean(bleu):.2f} ± {statistics.stdev(bleu):.2f} (p 0.001, seeds disagree)"
    assert table_row(text, BETTER).split(" | ")[2] == cell
    test = next(s for s in record["systems"] if s["name"] == BETTER.name)["significance"]["BLEU"]
    assert test["significant"] is False and test["seeds_disagree"] is True
    assert test["differences"]["1"] > 0 > test["differences"]["2"]


def test_density_statistics_curves_and_commands(grid_dir):
    grid, _ = grid_dir
    report = write_report(grid, ["python", "-m", "fairseq_struct.grid.translation", "--x"])
    text = report.read_text(encoding="utf-8")
    record = json.loads((grid.out / "report.json").read_text(encoding="utf-8"))

    # Morphemes per word of SEGMENTED's lines: 5/2, 7/2, 5/2, 4/2, 6/3, 7/3 (five times each).
    buckets = {row["label"]: row["sentences"] for row in record["density"]["buckets"]}
    assert {label: count for label, count in buckets.items() if count} == {
        "[2.00, 2.25)": 10, "[2.25, 2.50)": 5, "[2.50, 3.00)": 10, "[3.00, inf)": 5,
    }  # fmt: skip
    assert "| [2.50, 3.00) | 10 | 2.500 |" in text
    assert (grid.out / "density.png").stat().st_size > 0
    assert (grid.out / "curves.png").stat().st_size > 0
    assert record["test_set"]["morphemes per word"] == pytest.approx(34 / 14)
    assert record["test_set"]["pieces per word (bpe)"] == 1.0
    run = record["systems"][0]["runs"][0]
    assert run["validation_bleu"] == [[100, 5.0], [200, 7.5]] and run["updates"] == 200
    assert "python -m fairseq_struct.grid.translation --x" in text
    assert record["versions"]["sacrebleu"]


def test_a_grid_without_finished_runs_reports_them_missing(tmp_path):
    grid = TranslationGrid(
        train="a", valid="b", test="c", tgt_lang="tr", out=tmp_path / "grid", seeds=(1,)
    )
    text = write_report(grid, ["python"]).read_text(encoding="utf-8")
    assert text.count("| 0/1 (missing: 1) |") == 4
    assert "By morphological density" not in text and "curves.png" not in text


def test_runs_show_the_reported_checkpoint_its_valid_nll_and_the_output_length(tmp_path):
    """The report names each run's reported checkpoint (the best validation BLEU: update 100
    here, 7.5 then 6.0), its validation NLL there, the test outputs' length ratio and BP; WORSE
    (one word a sentence) flagged too short in its row, its system marked in the table."""
    grid, _ = build_grid(tmp_path / "grid", systems=(BETTER, WORSE))
    for system in (BETTER, WORSE):
        for seed in (1, 2):
            if (system, seed) != (WORSE, 2):
                log = grid.run_dir(system, seed) / "train.log"
                text = log.read_text(encoding="utf-8").replace("bleu 7.5", "bleu 4.0")
                log.write_text(text.replace("bleu 5.0", "bleu 6.0"), encoding="utf-8")
    report = write_report(grid, ["grid"]).read_text(encoding="utf-8")
    record = json.loads((grid.out / "report.json").read_text(encoding="utf-8"))
    runs = {(s["name"], r["seed"]): r for s in record["systems"] for r in s["runs"]}
    better, worse = runs[BETTER.name, 1], runs[WORSE.name, 1]
    hypotheses = [HYPOTHESES[WORSE](line, 1) for line in REFERENCES]
    bp, ratio = brevity_penalty_and_ratio(str(corpus_scores(hypotheses, REFERENCES)["BLEU"].text))
    assert (worse["reported_update"], worse["reported_valid_nll"]) == (100, 3.75)
    assert (worse["length_ratio"], worse["brevity_penalty"]) == (ratio, bp)
    assert ratio < 0.5 and worse["length_flag"] == "too short"
    assert (better["length_ratio"], better["length_flag"]) == (1.0, None)  # the references
    row = next(line for line in report.splitlines() if line.startswith(f"| {worse_dir(grid)} |"))
    assert f"| 100 | 3.750 | {ratio:.3f} ({bp:.3f}) ‡ too short |" in row
    assert f"| {WORSE.arch} ‡ | {WORSE.mode} |" in report
    assert f"| {BETTER.arch} (baseline) | {BETTER.mode} |" in report
    assert "outputs too short (length ratio" in report and "may lie in decoding" in report


def worse_dir(grid: TranslationGrid) -> str:
    return grid.run_dir(WORSE, 1).name


@pytest.mark.parametrize(
    "curve, expected",
    [
        ([(100, 5.0), (200, 7.5)], 200),
        ([(100, 6.0), (200, 4.0)], 100),
        ([(100, 6.0), (200, 6.0), (300, 5.9)], 200),  # a tie: fairseq keeps the later one
        ([], None),
    ],
)
def test_the_best_checkpoint_is_the_last_validation_at_least_as_good_as_all_before(curve, expected):
    assert best_update(curve) == expected


def test_length_figures_are_read_from_sacrebleus_line():
    line = "BLEU|nrefs:1|tok:13a = 12.11 42.1/16.0/7.8/4.1 (BP = 0.919 ratio = 0.922 hyp_len = 1)"
    assert brevity_penalty_and_ratio(line) == (0.919, 0.922)
    assert brevity_penalty_and_ratio("chrF2 = 37.13") is None


def test_compared_rules_show_how_stable_each_keeps_the_comparison(tmp_path):
    """The rule comparison's report: each evaluation's systems over seeds and its stability; the
    runs' reported checkpoints read from selection.json (averaged updates, tuned lenpen)."""
    compared = "average-last-2+lenpen"
    grid, _ = build_grid(tmp_path / "grid", systems=(BASELINE, BETTER), compare=(compared,))
    # The reported rule (the default, valid-bleu-beam) recorded 100: the report reads the
    # record, not the curve (whose lowest NLL, 3.5, and best beam-1 BLEU are at 200).
    selection = {"updates": [100], "valid_nll": {"100": 3.25}, "lenpen": None}
    for system, seed in [(BASELINE, 1), (BASELINE, 2), (BETTER, 1), (BETTER, 2)]:
        run = grid.run_dir(system, seed)
        (run / "eval" / "selection.json").write_text(json.dumps(selection), encoding="utf-8")
        # averaged, BETTER's seed 2 no better than the baseline: the sign is lost
        producer = HYPOTHESES[BASELINE if (system, seed) == (BETTER, 2) else system]
        averaged = {"updates": [200, 100], "valid_nll": {}, "lenpen": 1.5}
        hypotheses = [producer(line, seed) for line in REFERENCES]
        write_evaluation(run, f"evaluate-{compared}", hypotheses, averaged)
    report = write_report(grid, ["grid"]).read_text(encoding="utf-8")
    record = json.loads((grid.out / "report.json").read_text(encoding="utf-8"))
    reported, averaged = record["evaluations"]
    assert (reported["name"], reported["reported"], averaged["name"]) == (
        "valid-bleu-beam",
        True,
        compared,
    )
    assert reported["stability"]["BLEU"]["sign_agreement"] == 1.0
    assert (
        reported["stability"]["chrF"]["consistent_pairs"],
        reported["stability"]["chrF"]["pairs"],
    ) == (1, 1)
    assert averaged["stability"]["BLEU"]["sign_agreement"] == 0.0
    assert averaged["stability"]["BLEU"]["consistent_pairs"] == 0
    assert "| `valid-bleu-beam` (reported) | 1.00 | 1.00 | 1/1 | 1/1 |" in report
    assert f"| `{compared}` | 0.00 | 0.00 | 0/1 | 0/1 |" in report
    row = next(
        line for line in report.splitlines() if line.startswith(f"| `{compared}` | {BETTER.name} |")
    )
    assert row.endswith("| 1: 100+200 averaged, 2: 100+200 averaged |")
    runs = {(s["name"], r["seed"]): r for s in averaged["systems"] for r in s["runs"]}
    assert runs[BETTER.name, 2]["averaged_updates"] == [200, 100]
    assert (
        runs[BETTER.name, 2]["lenpen"] == 1.5 and runs[BETTER.name, 2]["reported_valid_nll"] is None
    )
    run_row = next(
        line
        for line in report.splitlines()
        if line.startswith(f"| {grid.run_dir(BASELINE, 1).name} |")
    )
    assert "| 100 | 3.250 |" in run_row
