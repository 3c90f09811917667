"""Grid steps: run once, skipped when complete, a killed or failed step run again, a changed
command refused, a failure named with its system, step and log."""

import json
import os
import re
import sys
from dataclasses import replace
from datetime import datetime, timedelta, timezone

import pytest

from fairseq_struct.grid.steps import (
    ATTEMPT_HEADER,
    GridError,
    Step,
    StepFailed,
    python_command,
    run_step,
    run_steps,
)


def counting_step(tmp_path, name="train", extra=""):
    """A step whose every run appends a line to runs.txt (and then runs `extra`)."""
    code = f"open('{tmp_path / 'runs.txt'}', 'a').write('{name}\\n'){extra}"
    return Step("morph + tp_transformer, seed 1", name, [sys.executable, "-c", code], tmp_path)


def killable_step(tmp_path, extra=""):
    """A counting step killed by a signal while the file `kill` exists, as when the machine or
    the user stops the grid in the middle; the same command line either way."""
    stop = tmp_path / "kill"
    kill = f"; import os, signal; os.path.exists('{stop}') and os.kill(os.getpid(), 9)"
    return counting_step(tmp_path, extra=kill + extra)


def runs(tmp_path) -> list:
    path = tmp_path / "runs.txt"
    return path.read_text().split() if path.exists() else []


def test_a_finished_step_is_skipped_and_its_marker_records_the_command(tmp_path):
    step = counting_step(tmp_path)
    first = run_step(step)
    again = run_step(step)
    assert runs(tmp_path) == ["train"]
    assert (first["skipped"], again["skipped"]) == (False, True)
    record = json.loads(step.marker.read_text())
    assert record["command"] == step.command_line() and record["wall_seconds"] >= 0
    assert step.log.read_text().startswith("== ")


def test_a_killed_step_runs_again_and_the_steps_before_it_do_not(tmp_path):
    prepare = counting_step(tmp_path, "prepare")
    train = killable_step(tmp_path)
    (tmp_path / "kill").touch()
    with pytest.raises(StepFailed, match="step 'train' failed"):
        run_steps([prepare, train], announce=lambda line: None)
    assert not train.marker.exists() and prepare.marker.exists()
    (tmp_path / "kill").unlink()
    announced = []
    run_steps([prepare, train], announce=announced.append)
    assert runs(tmp_path) == ["prepare", "train", "train"]
    assert announced[0].endswith("prepare (done earlier)")
    # Both attempts stay in the log, each under its own header, the killed one closed.
    log = train.log.read_text()
    assert len(ATTEMPT_HEADER.findall(log)) == 2
    assert "== the attempt above ran 0 s (exit status -9)" in log


def test_a_failed_attempts_time_counts_in_the_steps_wall_time(tmp_path):
    flag = tmp_path / "fail"
    code = f"import os, sys, time; time.sleep(1); sys.exit(os.path.exists('{flag}'))"
    step = Step("bpe + transformer_relpos, seed 1", "train", [sys.executable, "-c", code], tmp_path)
    flag.touch()
    with pytest.raises(StepFailed):
        run_step(step)
    flag.unlink()
    record = run_step(step)
    failed = float(re.search(r"^== the attempt above ran (\d+) s \(exit status 1\)$",
                             step.log.read_text(), re.M).group(1))  # fmt: skip
    assert failed >= 1 and record["wall_seconds"] >= 2
    assert step.log.read_text().endswith(
        f"== finished after {record['wall_seconds']:.0f} s in all\n"
    )


def test_a_killed_grids_attempt_is_timed_until_its_last_output(tmp_path):
    """The grid itself killed (the machine stopped): the next run closes the attempt in the log
    with the time from its header to the log's last change, and counts it in the marker's time
    (the report's training time of a resumed run)."""
    step = counting_step(tmp_path)
    started = datetime.now(timezone.utc).replace(microsecond=0) - timedelta(seconds=600)
    step.log.write_text(
        f"== {started.isoformat(timespec='seconds')} {step.command_line()}\nupdate 500\n"
    )
    last_output = started.timestamp() + 420
    os.utime(step.log, (last_output, last_output))
    record = run_step(step)
    assert "== the attempt above ran 420 s, until its last output (killed)" in step.log.read_text()
    assert 420 <= record["wall_seconds"] < 430
    # A step run again after it finished (its marker deleted) does not count the old attempts.
    step.marker.unlink()
    assert run_step(step)["wall_seconds"] < 10


def test_a_failure_names_system_step_log_and_shows_the_log_end(tmp_path):
    code = "import sys; print('loading data'); sys.exit('data/train.en: no such file')"
    step = Step("data morph", "prepare", [sys.executable, "-c", code], tmp_path)
    with pytest.raises(StepFailed) as failure:
        run_step(step)
    message = str(failure.value)
    assert "data morph, step 'prepare' failed (exit status 1)" in message
    assert f"log: {step.log}" in message
    assert message.rstrip().endswith("data/train.en: no such file")
    assert not step.marker.exists()


def test_a_step_finished_with_another_command_is_not_reused(tmp_path):
    run_step(counting_step(tmp_path))
    other = counting_step(tmp_path, extra="; print('--max-update 4000')")
    with pytest.raises(GridError, match=r"finished earlier with another command .*done\.json"):
        run_step(other)
    assert runs(tmp_path) == ["train"]


def test_a_killed_attempt_of_another_command_is_not_resumed(tmp_path):
    # Killed mid-way with one budget; fairseq-train would resume its checkpoint under another.
    (tmp_path / "kill").touch()
    with pytest.raises(StepFailed):
        run_step(killable_step(tmp_path))
    (tmp_path / "kill").unlink()
    other = killable_step(tmp_path, extra="; print('--max-update 4000')")
    with pytest.raises(GridError, match=r"started earlier with another command and did not fin"):
        run_step(other)
    assert runs(tmp_path) == ["train"]
    # The killed command itself resumes.
    run_step(killable_step(tmp_path))
    assert runs(tmp_path) == ["train", "train"]


def test_a_step_that_starts_afresh_runs_over_another_commands_attempt(tmp_path):
    """An evaluation (resumable=False) of a grid whose evaluate command changed, its marker
    deleted as the error says: it runs again, not stopped for the old attempt's output."""
    (tmp_path / "kill").touch()
    with pytest.raises(StepFailed):
        run_step(killable_step(tmp_path))
    (tmp_path / "kill").unlink()
    other = replace(killable_step(tmp_path, extra="; print('--rule last')"), resumable=False)
    assert not run_step(other)["skipped"]
    assert runs(tmp_path) == ["train", "train"]


def test_the_environment_and_launcher_are_part_of_the_run(tmp_path):
    code = "import os, sys; print(os.environ['OMP_NUM_THREADS'], sys.argv[1:])"
    step = Step("x", "train", [sys.executable, "-c", code, "a"], tmp_path, {"OMP_NUM_THREADS": "3"})
    assert step.command_line().startswith("OMP_NUM_THREADS=3 ")
    # A launcher prefixes the command (srun ... on a cluster); `env` stands in for one here.
    run_step(step, launcher=["env", "LAUNCHED=1"])
    assert "3 ['a']" in step.log.read_text()


def test_python_steps_use_the_python_the_scripts_use(monkeypatch, tmp_path):
    """A grid's `python -m` steps run where scripts/lib/tools.sh runs the scripts' python:
    FAIRSEQ_STRUCT_TOOLS's bin/ when set, else the grid's own interpreter."""
    monkeypatch.setenv("FAIRSEQ_STRUCT_TOOLS", str(tmp_path / "bin"))
    assert python_command() == str(tmp_path / "bin" / "python")
    monkeypatch.delenv("FAIRSEQ_STRUCT_TOOLS")
    assert python_command() == sys.executable
