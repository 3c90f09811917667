"""Almost Stochastic Order over seeds: deepsig's ε_min at α = 0.05 in both directions and a
verdict at threshold τ (design.md §5.4; the BERT2D paper's appendix)."""

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import run_tool

from fairseq_struct.eval.almost_stochastic_order import (
    NO_DIFFERENCE,
    ASOResult,
    ScoresError,
    SystemScores,
    almost_stochastic_order,
    eps_min,
    main,
    read_scores,
)

REPO_ROOT = Path(__file__).resolve().parents[2]
# deepsig's default is 1000; fewer keep each test around a second and still separate clearly.
BOOTSTRAP = "200"


def seeded_scores(mean: float, seed: int, n: int = 10, spread: float = 0.01) -> list:
    return [float(x) for x in mean + spread * np.random.default_rng(seed).standard_normal(n)]


GOOD = seeded_scores(0.9, seed=0)
BAD = seeded_scores(0.5, seed=1)


def system(name: str, scores: list) -> SystemScores:
    return SystemScores(name=name, scores=scores, source="test")


def compare(a: list, b: list, **options) -> ASOResult:
    options.setdefault("num_bootstrap_iterations", int(BOOTSTRAP))
    return almost_stochastic_order(system("good", a), system("bad", b), **options)


def runner_json(path: Path, name: str, scores: list, metric: str = "f1") -> str:
    record = {"name": name, "metric": metric, "seeds": list(range(1, len(scores) + 1))}
    record.update(scores=scores, mean=float(np.mean(scores)), std=float(np.std(scores, ddof=1)))
    path.write_text(json.dumps(record), encoding="utf-8")
    return str(path)


def test_clearly_better_system_is_dominant():
    result = compare(GOOD, BAD)

    assert result.eps_min_a_over_b < 0.2
    assert result.eps_min_b_over_a > 0.8
    assert result.dominant == "A"
    assert result.verdict == "good is stochastically dominant over bad"


def test_dominance_is_found_in_either_order():
    result = almost_stochastic_order(
        system("bad", BAD), system("good", GOOD), num_bootstrap_iterations=int(BOOTSTRAP)
    )

    assert result.eps_min_a_over_b > 0.8
    assert result.eps_min_b_over_a < 0.2
    assert result.verdict == "good is stochastically dominant over bad"


def test_samples_of_one_distribution_show_no_significant_difference():
    result = compare(seeded_scores(0.7, seed=2), seeded_scores(0.7, seed=3))

    assert result.eps_min_a_over_b >= 0.5 and result.eps_min_b_over_a >= 0.5
    assert result.dominant is None
    assert result.verdict == NO_DIFFERENCE


def test_equal_scores_show_no_significant_difference():
    result = compare(GOOD, list(GOOD))

    assert result.verdict == NO_DIFFERENCE


def verdict(eps_a_over_b: float, eps_b_over_a: float, threshold: float) -> str:
    return ASOResult(
        system("A", GOOD), system("B", BAD), "f1", eps_a_over_b, eps_b_over_a, threshold, 0.95, 1, 1
    ).verdict


def test_verdict_depends_on_the_threshold():
    assert verdict(0.3, 0.95, threshold=0.5) == "A is stochastically dominant over B"
    assert verdict(0.3, 0.95, threshold=0.2) == NO_DIFFERENCE
    assert verdict(0.95, 0.3, threshold=0.5) == "B is stochastically dominant over A"
    assert verdict(0.95, 0.3, threshold=0.2) == NO_DIFFERENCE
    assert verdict(0.5, 0.6, threshold=0.5) == NO_DIFFERENCE  # ε_min < τ, strictly


def test_near_tie_below_the_threshold_goes_to_the_smaller_violation():
    assert verdict(0.45, 0.4, threshold=0.5) == "B is stochastically dominant over A"
    assert verdict(0.4, 0.45, threshold=0.5) == "A is stochastically dominant over B"


def test_threshold_above_one_half_is_refused():
    with pytest.raises(ValueError, match=r"\(0, 0.5\]"):
        compare(GOOD, BAD, threshold=0.7)


def test_bootstrap_is_reproducible_and_leaves_numpy_random_state_alone():
    close_a, close_b = seeded_scores(0.705, seed=2), seeded_scores(0.7, seed=3)
    np.random.seed(7)
    expected_next = np.random.rand()
    np.random.seed(7)
    first = eps_min(close_a, close_b, num_bootstrap_iterations=50, seed=1234)

    assert np.random.rand() == expected_next
    assert 0 < first < 1  # not clipped, so a different bootstrap shows
    assert eps_min(close_a, close_b, num_bootstrap_iterations=50, seed=1234) == first
    assert eps_min(close_a, close_b, num_bootstrap_iterations=50, seed=99) != first


def test_reads_the_seeds_runner_json(tmp_path):
    path = runner_json(tmp_path / "bert2d-ner.seeds.json", "bert2d-ner", [0.8, 0.82, 0.81])

    scores = read_scores(path, "f1")

    assert scores.name == "bert2d-ner"
    assert scores.scores == [0.8, 0.82, 0.81]
    assert scores.metric == "f1"


def test_reads_a_json_of_metric_lists(tmp_path):
    path = tmp_path / "bert.json"
    path.write_text(json.dumps({"f1": [80.1, 81.2], "exact_match": [70, 71]}), encoding="utf-8")

    scores = read_scores(str(path), "exact_match")

    assert (scores.name, scores.scores, scores.metric) == ("bert", [70.0, 71.0], "exact_match")


def test_reads_a_text_file_of_one_score_a_line(tmp_path):
    path = tmp_path / "bert.txt"
    path.write_text("# dev F1 of seeds 1-3\n0.81\n\n0.83\n0.8\n", encoding="utf-8")

    assert read_scores(str(path)).scores == [0.81, 0.83, 0.8]
    path.write_text("0.81\nnan-ish\n", encoding="utf-8")
    with pytest.raises(ScoresError, match=r"bert.txt, line 2: expected one score, got 'nan-ish'"):
        read_scores(str(path))


def test_command_line_prints_table_and_writes_json(tmp_path, capsys):
    a = runner_json(tmp_path / "a.json", "bert2d", GOOD)
    out = tmp_path / "aso.json"

    code = main(
        [a, "--scores-b", *map(str, BAD), "--name-b", "bert"]
        + ["--num-bootstrap-iterations", BOOTSTRAP, "--json", str(out)]
    )

    printed = capsys.readouterr().out
    assert code == 0
    assert "aso|alpha:0.05|tau:0.5|bootstrap:200|seed:1234|deepsig:" in printed
    assert f"{np.mean(GOOD):.4f} ± {np.std(GOOD, ddof=1):.4f}" in printed
    assert "verdict (ε_min < 0.5): bert2d is stochastically dominant over bert" in printed
    record = json.loads(out.read_text(encoding="utf-8"))
    assert record["metric"] == "f1"
    assert record["a"]["name"] == "bert2d" and record["b"]["source"] == "command line"
    assert record["a"]["n"] == 10 and record["b"]["scores"] == BAD
    assert record["b"]["std"] == pytest.approx(np.std(BAD, ddof=1))
    assert record["dominant"] == "A"
    assert record["eps_min_a_over_b"] < 0.2 < 0.8 < record["eps_min_b_over_a"]


def test_both_systems_from_the_command_line(capsys):
    code = main(
        ["--scores-a", "0.7", "0.71", "--scores-b", "0.7", "0.71"]
        + ["--num-bootstrap-iterations", "20"]
    )

    assert code == 0
    assert "verdict (ε_min < 0.5): no significant difference" in capsys.readouterr().out


def test_fewer_than_two_scores_is_an_error(capsys):
    code = main(["--scores-a", "0.8", "--scores-b", "0.7", "0.71"])

    assert code == 1
    assert "A has 1 score(s)" in capsys.readouterr().err
    with pytest.raises(ScoresError, match="needs several seeds"):
        compare([0.9], BAD)


def test_missing_metric_names_the_file_and_the_keys(tmp_path, capsys):
    metrics = tmp_path / "bert.json"
    metrics.write_text(json.dumps({"f1": [1, 2], "exact_match": [1, 2]}), encoding="utf-8")
    runner = runner_json(tmp_path / "runner.json", "bert2d", GOOD, metric="f1")

    assert main([str(metrics), runner, "--metric", "accuracy"]) == 1
    error = capsys.readouterr().err
    assert f"{metrics}: no metric 'accuracy'; keys present: ['exact_match', 'f1']" in error

    assert main([runner, str(metrics), "--metric", "exact_match"]) == 1
    error = capsys.readouterr().err
    assert f"{runner}: no metric 'exact_match'; the file holds scores of metric 'f1'" in error

    assert main([str(metrics), "--scores-b", "1", "2"]) == 1
    assert "pick one metric with --metric" in capsys.readouterr().err


def test_two_systems_are_needed(tmp_path, capsys):
    assert main(["--scores-a", "0.7", "0.71"]) == 1
    assert "expected 1 score file(s)" in capsys.readouterr().err


def test_runs_as_a_module(tmp_path):
    result = run_tool(  # fails with the end of its standard error unless it exits 0
        [sys.executable, "-m", "fairseq_struct.eval.almost_stochastic_order"]
        + ["--scores-a", *map(str, GOOD), "--scores-b", *map(str, BAD)]
        + ["--num-bootstrap-iterations", "20", "--threshold", "0.2"],
        cwd=REPO_ROOT,
        timeout=300,
    )

    assert "verdict (ε_min < 0.2): A is stochastically dominant over B" in result.stdout
