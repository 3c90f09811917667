"""A tiny translation grid end to end, killed in the middle and started again: only the
unfinished steps run the second time, and the report has every system.

Real preparation, fairseq-train and evaluate.sh runs, on 300 synthetic pairs with 8 updates: the
check is the grid's bookkeeping, not the BLEU it reaches. At the end, checkpoint rules compared on
one system's finished run: only their evaluations run, each decode once. About 95 s alone on a
2-core machine (its programs are forked from the preloaded interpreter:
conftest.script_environment), and no shared fixture can stand in: the test is a grid started from
nothing, killed in the middle and started again. Both systems use the bpe mode, so that they share
one preparation (the morph mode's steps are the same commands with another --mode; its report parts
are checked in test_translation_report.py).
"""

import json
import os
import signal
import subprocess
import sys
import time

from conftest import REPO_ROOT, run_tool, script_environment

from fairseq_struct.demo_data.synthetic_en_tr import write_corpus
from fairseq_struct.grid.curves import validation_curve
from fairseq_struct.grid.run_evaluation import best_lenpen
from fairseq_struct.grid.steps import ATTEMPT_HEADER
from fairseq_struct.grid.translation import main as translation_grid_main

SYSTEMS = ("bpe:transformer_relpos", "bpe:tp_transformer")


def wait_for(condition, process, timeout=300.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if process.poll() is not None:
            raise AssertionError(f"the grid ended before it was killed:\n{process.stdout.read()}")
        if time.monotonic() > deadline:
            raise AssertionError("the grid did not reach the point to kill it at")
        time.sleep(0.2)


def test_a_killed_grid_started_again_redoes_only_the_unfinished_steps(tmp_path, capsys):
    raw = tmp_path / "raw"
    write_corpus(raw, n_train=300, n_valid=30, n_test=40, seed=3)
    out = tmp_path / "grid"
    grid_options = [
        sys.executable, "-m", "fairseq_struct.grid.translation", "--tgt-lang", "tr",
        "--train", str(raw / "train"), "--valid", str(raw / "valid"), "--test", str(raw / "test"),
        "--out", str(out), "--max-update", "8", "--vocab-size", "300", "--systems", *SYSTEMS,
    ]  # fmt: skip
    # Two checkpoints a run, validated and kept: 6 updates (within the second 4-update epoch:
    # fairseq saves no interval checkpoint at an epoch's end) and the last, 8.
    train_options = ["--", "--save-interval-updates", "6", "--validate-interval-updates", "6"]
    train_options += ["--keep-interval-updates", "-1"]
    command = grid_options + train_options
    first_run = out / "runs" / "bpe-transformer_relpos-seed1"
    second_run = out / "runs" / "bpe-tp_transformer-seed1"

    # Killed (the whole process group, as a terminal's Ctrl-\ or a cluster's time limit) once
    # the second system's training has started.
    env = script_environment()
    grid = subprocess.Popen(
        command,
        cwd=REPO_ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        wait_for(lambda: (second_run / "train.log").exists(), grid)
    finally:
        os.killpg(grid.pid, signal.SIGKILL)
        grid.wait()
    finished = {
        marker: marker.read_text()
        for marker in [*out.glob("data/*/.*.done.json"), *first_run.glob(".*.done.json")]
    }
    assert len(finished) == 3  # the preparation, the first system's training and evaluation
    assert not list(second_run.glob(".*.done.json"))

    again = run_tool(command, cwd=REPO_ROOT, timeout=600).stdout
    done_earlier = [line for line in again.splitlines() if line.endswith("(done earlier)")]
    assert [line.split("] ", 1)[1] for line in done_earlier] == [
        "data bpe: prepare (done earlier)",
        "bpe + transformer_relpos, seed 1: train (done earlier)",
        "bpe + transformer_relpos, seed 1: evaluate (done earlier)",
    ]
    assert "bpe + tp_transformer, seed 1: train finished" in again
    assert all(marker.read_text() == text for marker, text in finished.items())
    log = (second_run / "train.log").read_text()
    assert len(ATTEMPT_HEADER.findall(log)) == 2  # both attempts, the killed one closed
    assert "== the attempt above ran" in log and "== finished after" in log

    record = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert [system["name"] for system in record["systems"]] == [
        "bpe-transformer_relpos",
        "bpe-tp_transformer",
    ]
    for system in record["systems"]:
        (run,) = system["runs"]
        assert run["finished"] and run["updates"] == 8
        assert set(run["scores"]) == {"BLEU", "chrF", "chrF++"}
        # evaluate.sh's sacreBLEU line gives the outputs' length against the references
        assert run["length_ratio"] > 0 and 0 < run["brevity_penalty"] <= 1
    hypotheses = (second_run / "eval" / "hyp.txt").read_text(encoding="utf-8").splitlines()
    assert len(hypotheses) == 40
    report = (out / "report.md").read_text(encoding="utf-8")
    # 8 updates: the outputs' length may be flagged (‡), as the run's record says
    mark = " ‡" if record["systems"][1]["runs"][0]["length_flag"] else ""
    assert f"| tp_transformer{mark} | bpe |" in report and "| 1/1 |" in report
    assert not (out / "data" / "morph").exists()

    compare_rules(grid_options, train_options, out, second_run, capsys)


def test_bad_input_stops_the_grid_at_preparation_naming_file_and_line(
    tmp_path, capsys, monkeypatch
):
    from fairseq_struct.grid.translation import main

    for name, value in script_environment().items():  # its scripts' programs: the stand-ins
        monkeypatch.setenv(name, value)
    raw = tmp_path / "raw"
    write_corpus(raw, n_train=50, n_valid=5, n_test=5, seed=3)
    lines = (raw / "train.tr").read_text(encoding="utf-8").splitlines()
    (raw / "train.tr").write_text("\n".join(lines[:-1]) + "\n", encoding="utf-8")  # one short
    out = tmp_path / "grid"
    code = main(
        [
            "--tgt-lang", "tr", "--train", str(raw / "train"), "--valid", str(raw / "valid"),
            "--test", str(raw / "test"), "--out", str(out), "--systems", *SYSTEMS,
        ]
    )  # fmt: skip
    assert code == 1
    error = capsys.readouterr().err
    assert "data bpe, step 'prepare' failed" in error
    assert "train.en" in error and "train.tr" in error  # the mismatched pair, named
    assert not (out / "runs").exists()  # no training started


def compare_rules(grid_options, train_options, out, run, capsys) -> None:
    """Checkpoint rules compared on the finished grid run only their own evaluations; each
    chooses on the validation set, and a decode two evaluations share is made once."""
    rules = ["valid-nll+lenpen", "average-last-2", "valid-bleu"]
    # The second system alone (a grid of fewer systems runs their steps only): half the decodes.
    systems = grid_options.index("--systems") + 1
    command = grid_options[:systems] + [SYSTEMS[1]] + grid_options[systems + len(SYSTEMS) :]
    command += ["--compare-rules", *rules, "--lenpen-grid", "1", "1.5"]
    output = run_tool(command + train_options, cwd=REPO_ROOT, timeout=600).stdout
    ran = [line.split(": ", 1)[1] for line in output.splitlines() if " finished in " in line]
    assert [step.split(" finished")[0] for step in ran] == [f"evaluate-{rule}" for rule in rules]

    log = run / "train.log"
    nll = dict(validation_curve(log, "nll_loss"))
    assert set(nll) >= {6, 8}
    selection = json.loads((run / "eval-valid-nll+lenpen" / "selection.json").read_text())
    assert selection["updates"] == [min((6, 8), key=lambda update: (nll[update], -update))]
    lenpens = {float(value): bleu for value, bleu in selection["lenpen_scores"].items()}
    assert set(lenpens) == {1.0, 1.5} and selection["lenpen"] == best_lenpen(lenpens)
    averaged = json.loads((run / "eval-average-last-2" / "selection.json").read_text())
    assert averaged["updates"] == [8, 6] and (run / "decodes" / "average-6+8.pt").is_file()
    # the reported rule (the default, valid-bleu-beam): the validation set decoded by both
    by_beam = json.loads((run / "eval" / "selection.json").read_text())
    assert by_beam["rule"] == "valid-bleu-beam" and set(by_beam["candidates"]) == {"6", "8"}
    # every decode once: as many evaluate.sh runs in the run's logs as decodes kept
    logs = "".join(path.read_text() for path in run.glob("evaluate*.log"))
    assert logs.count("evaluate.sh: wrote") == len(list((run / "decodes").glob("*/decoded.json")))
    assert len(list((run / "decodes").glob("valid-*-lenpen1"))) == 2  # shared by two rules
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "## Checkpoint rules compared" in report
    assert all(f"| `{rule}` | bpe-tp_transformer |" in report for rule in rules)

    # A report of another rule than the one the runs were evaluated under is refused, not written
    # with the other rule's scores under this one's name.
    grid_arguments = command[command.index("fairseq_struct.grid.translation") + 1 :]
    report_only = grid_arguments + ["--checkpoint-rule", "valid-nll", "--report-only"]
    assert translation_grid_main(report_only + train_options) == 1
    error = capsys.readouterr().err
    assert "evaluate' finished earlier with another command" in error
    assert f"{run / '.evaluate.done.json'}" in error and "--rule valid-nll" in error
    assert (out / "report.md").read_text(encoding="utf-8") == report
