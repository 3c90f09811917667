"""One configuration over several seeds: {seed} substituted, seeds resumed, failures stop the
run with the command's exit code, mean ± std with the sample std (design.md §5.4)."""

import json
import math
import sys
from pathlib import Path

import pytest
from conftest import run_tool

from fairseq_struct.downstream.seeds import SeedRunError, main, read_metric
from fairseq_struct.eval.almost_stochastic_order import read_scores

REPO_ROOT = Path(__file__).resolve().parents[2]

# A stand-in for fine-tuning: records its arguments, fails for seed FAIL (exit 3), and writes
# {"dev": {"f1": F1[seed]}, "loss": ...} to the scores path it is given.
FAKE_TRAINING = """
import json, sys
seed, save_dir, scores, log = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
with open(log, "a") as file:
    file.write(json.dumps(sys.argv[1:]) + "\\n")
if seed == 13:
    print("diverged", file=sys.stderr)
    sys.exit(3)
f1 = {1: 80.0, 2: 82.0, 4: 87.0, 13: 0.0}[seed]
json.dump({"dev": {"f1": f1}, "loss": 1.0 / seed}, open(scores, "w"))
print(f"trained seed {seed}")
"""


def command(tmp_path: Path) -> list:
    return [
        sys.executable,
        "-c",
        FAKE_TRAINING,
        "{seed}",
        "--save-dir=ckpt/seed{seed} $HOME {x}",
        str(tmp_path / "scores-{seed}.json"),
        str(tmp_path / "runs.log"),
    ]


def runs(tmp_path: Path) -> list:
    log = tmp_path / "runs.log"
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines()]


def run(tmp_path: Path, seeds: list, *options: str) -> int:
    return main(
        ["--seeds", *map(str, seeds), "--scores", str(tmp_path / "scores-{seed}.json")]
        + ["--metric", "dev.f1", *options, "--", *command(tmp_path)]
    )


def test_seed_is_substituted_in_every_argument_and_nothing_else(tmp_path):
    assert run(tmp_path, [1, 2]) == 0

    first, second = runs(tmp_path)
    # No shell: "$HOME" stays literal; only "{seed}" is replaced, "{x}" is kept.
    assert first[:2] == ["1", "--save-dir=ckpt/seed1 $HOME {x}"]
    assert second[:3] == ["2", "--save-dir=ckpt/seed2 $HOME {x}", str(tmp_path / "scores-2.json")]
    assert (tmp_path / "scores-1.json").exists() and (tmp_path / "scores-2.json").exists()


def test_mean_and_sample_std_are_exact(tmp_path, capfd):
    out = tmp_path / "results" / "bert2d-ner.seeds.json"

    assert run(tmp_path, [1, 2, 4], "--name", "bert2d-ner", "--out", str(out)) == 0

    summary = json.loads(out.read_text(encoding="utf-8"))
    # (80 + 82 + 87) / 3 = 83; ((-3)² + (-1)² + 4²) / (3 - 1) = 13
    assert summary == {
        "name": "bert2d-ner",
        "metric": "dev.f1",
        "seeds": [1, 2, 4],
        "scores": [80.0, 82.0, 87.0],
        "mean": 83.0,
        "std": math.sqrt(13),
    }
    printed = capfd.readouterr().out
    assert "trained seed 4" in printed  # the command's output is streamed
    assert printed.splitlines()[-1] == "bert2d-ner: 83.00 ± 3.61 over 3 seeds (dev.f1)"


def test_one_seed_has_std_zero_and_name_from_out(tmp_path, capfd):
    out = tmp_path / "bert.seeds.json"

    assert run(tmp_path, [2], "--out", str(out)) == 0

    summary = json.loads(out.read_text(encoding="utf-8"))
    assert (summary["name"], summary["mean"], summary["std"]) == ("bert", 82.0, 0.0)
    assert capfd.readouterr().out.splitlines()[-1] == "bert: 82.00 ± 0.00 over 1 seed (dev.f1)"


def test_existing_scores_are_skipped_so_a_killed_run_resumes(tmp_path):
    (tmp_path / "scores-2.json").write_text(json.dumps({"dev": {"f1": 90.0}}))
    out = tmp_path / "resumed.json"

    assert run(tmp_path, [1, 2, 4], "--out", str(out)) == 0

    assert [arguments[0] for arguments in runs(tmp_path)] == ["1", "4"]
    assert json.loads(out.read_text())["scores"] == [80.0, 90.0, 87.0]


def test_rerun_runs_seeds_with_existing_scores_again(tmp_path):
    (tmp_path / "scores-2.json").write_text(json.dumps({"dev": {"f1": 90.0}}))
    out = tmp_path / "rerun.json"

    assert run(tmp_path, [1, 2], "--rerun", "--out", str(out)) == 0

    assert [arguments[0] for arguments in runs(tmp_path)] == ["1", "2"]
    assert json.loads(out.read_text())["scores"] == [80.0, 82.0]


def test_failing_seed_stops_the_run_with_its_exit_code(tmp_path, capfd):
    out = tmp_path / "failed.json"

    assert run(tmp_path, [1, 13, 2], "--out", str(out)) == 3

    error = capfd.readouterr().err
    assert "diverged" in error
    assert "error: seed 13: the command failed with exit code 3" in error
    assert [arguments[0] for arguments in runs(tmp_path)] == ["1", "13"]
    assert not out.exists()


def test_a_command_that_writes_no_scores_names_the_seed(tmp_path, capfd):
    code = main(
        ["--seeds", "5", "--scores", str(tmp_path / "s{seed}.json"), "--metric", "f1", "--"]
        + [sys.executable, "-c", "import sys; sys.exit(0)", "{seed}"]
    )

    assert code == 1
    assert (
        f"seed 5: the command succeeded but wrote no {tmp_path / 's5.json'}"
        in capfd.readouterr().err
    )


def test_metric_is_read_flat_or_nested(tmp_path):
    path = tmp_path / "scores.json"
    path.write_text(json.dumps({"f1": 81.5, "dev": {"f1": 80.0}, "test.f1": 79.0}))

    assert read_metric(path, "f1") == 81.5
    assert read_metric(path, "dev.f1") == 80.0
    assert read_metric(path, "test.f1") == 79.0  # a flat key with a dot wins
    with pytest.raises(SeedRunError, match=r"no metric 'dev.em'; keys at dev: \['f1'\]"):
        read_metric(path, "dev.em")
    with pytest.raises(SeedRunError, match=r"keys at the top level: \['dev', 'f1', 'test.f1'\]"):
        read_metric(path, "accuracy")
    path.write_text(json.dumps({"f1": None}))
    with pytest.raises(SeedRunError, match="'f1' is None, not a number"):
        read_metric(path, "f1")


def test_arguments_are_checked(tmp_path, capsys):
    scores = str(tmp_path / "s{seed}.json")
    for argv, message in (
        (["--seeds", "1", "--scores", scores, "--metric", "f1"], "after --"),
        (["--seeds", "1", "1", "--scores", scores, "--metric", "f1", "--", "x{seed}"], "repeats"),
        (["--seeds", "1", "--scores", "s.json", "--metric", "f1", "--", "x{seed}"], "--scores"),
        (["--seeds", "1", "--scores", scores, "--metric", "f1", "--", "x"], "no {seed}"),
    ):
        with pytest.raises(SystemExit) as exit_info:
            main(argv)
        assert exit_info.value.code == 2
        assert message in capsys.readouterr().err


def test_summary_is_read_by_almost_stochastic_order(tmp_path):
    out = tmp_path / "bert2d-ner.seeds.json"
    assert run(tmp_path, [1, 2, 4], "--out", str(out)) == 0

    scores = read_scores(str(out), "dev.f1")

    assert (scores.name, scores.scores) == ("bert2d-ner", [80.0, 82.0, 87.0])


def test_runs_as_a_module(tmp_path):
    result = run_tool(  # fails with the end of its standard error unless it exits 0
        [sys.executable, "-m", "fairseq_struct.downstream.seeds", "--seeds", "4"]
        + ["--scores", str(tmp_path / "scores-{seed}.json"), "--metric", "dev.f1", "--"]
        + command(tmp_path),
        cwd=REPO_ROOT,
        timeout=300,
    )

    assert result.stdout.splitlines()[-1] == "system: 87.00 ± 0.00 over 1 seed (dev.f1)"
    assert "seed 4: " in result.stderr  # the command line is logged
