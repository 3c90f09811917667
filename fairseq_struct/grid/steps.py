"""The steps of an experiment grid: commands run once, skipped when their output is complete.

A step (one command line of one system) is complete when its marker
`<directory>/.<name>.done.json` exists, written atomically after the command exits 0 (the
command, its wall time over all attempts, when it finished); its output is appended to
`<directory>/<name>.log`, a header line naming the command before each attempt. A killed step
runs again, resuming its output (fairseq-train its `checkpoint_last.pt`); a marker or a killed
attempt left by another command line stops the grid instead, naming what to delete.
"""

import json
import os
import re
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence

from fairseq_struct.corpus_io import atomic_write_json

LOG_TAIL_LINES = 25
# Each attempt's first log line: "== <UTC time> <command line>".
ATTEMPT_HEADER = re.compile(r"^== (\d{4}-\d\d-\d\dT\S+) (.*)$", re.MULTILINE)
# An attempt that did not finish is closed by how long it ran: written when it fails, or, when
# it was killed, by the next attempt (until the log's last change, its last output).
ATTEMPT_RAN = re.compile(r"^== the attempt above ran ([0-9.]+) s", re.MULTILINE)
# The attempt that finished closes the log with the wall time of all its attempts.
STEP_FINISHED = re.compile(r"^== finished after ([0-9.]+) s in all", re.MULTILINE)


class GridError(RuntimeError):
    """A grid that cannot go on; the message says what to do."""


class StepFailed(GridError):
    """A step's command exited with an error."""


def marker_path(directory: Path, name: str) -> Path:
    """Where the step `name` of a directory records that it finished."""
    return directory / f".{name}.done.json"


def marker_record(directory: Path, name: str) -> Optional[dict]:
    """What the finished step `name` of a directory recorded (command, wall_seconds,
    finished); None while it has not finished. For reports, which read what ran."""
    marker = marker_path(directory, name)
    if not marker.is_file():
        return None
    return json.loads(marker.read_text(encoding="utf-8"))


def wall_seconds(directory: Path, name: str) -> Optional[float]:
    """How long the finished step `name` of a directory took, all its attempts together; None
    while it has not finished."""
    record = marker_record(directory, name)
    return None if record is None else float(record["wall_seconds"])


@dataclass(frozen=True)
class Step:
    system: str  # what the step belongs to: "data bpe", "morph + tp_transformer, seed 1"
    name: str  # "prepare", "train", "evaluate"
    command: List[str]
    directory: Path  # its marker and log go here
    env: Dict[str, str] = field(default_factory=dict)  # added to the grid's environment
    # Whether the command picks up a killed attempt's output (fairseq-train its checkpoint):
    # such a step does not run over the output of another command's attempt.
    resumable: bool = True

    @property
    def marker(self) -> Path:
        return marker_path(self.directory, self.name)

    @property
    def log(self) -> Path:
        return self.directory / f"{self.name}.log"

    def command_line(self) -> str:
        settings = [f"{key}={shlex.quote(value)}" for key, value in sorted(self.env.items())]
        return " ".join(settings + [shlex.quote(part) for part in self.command])

    def finished(self) -> Optional[dict]:
        """The marker's record when the step finished with this command, else None.

        Raises:
            GridError: the step finished with another command line.
        """
        record = marker_record(self.directory, self.name)
        if record is None:
            return None
        if record.get("command") != self.command_line():
            raise GridError(
                f"{self.system}: step '{self.name}' finished earlier with another command "
                f"(recorded in {self.marker}):\n  was: {record.get('command')}\n  now: "
                f"{self.command_line()}\nDelete that file to run the step again with the new "
                "command, or give the grid another output directory."
            )
        return record

    def check_unfinished_attempt(self) -> None:
        """Before (re)running: a killed attempt left by another command is not resumed.

        Raises:
            GridError: the log's last attempt ran another command line.
        """
        previous = last_attempt_command(self.log)
        if previous is not None and previous != self.command_line():
            raise GridError(
                f"{self.system}: step '{self.name}' was started earlier with another command and "
                f"did not finish (log: {self.log}):\n  was: {previous}\n  now: "
                f"{self.command_line()}\nIts partial output in {self.directory} would be resumed "
                "under the new command: delete that directory, or give the grid another output "
                "directory."
            )


def last_attempt_command(log: Path) -> Optional[str]:
    """The command line in the last attempt header of a step's log; None without a log."""
    if not log.is_file():
        return None
    text = log.read_text(encoding="utf-8", errors="replace")
    headers = ATTEMPT_HEADER.findall(text)
    return headers[-1][1] if headers else None


def earlier_attempts_seconds(log: Path) -> float:
    """The wall time of the attempts since the step last finished, a killed one closed first
    (timed until its last output: a resumed run's training time counts all its attempts)."""
    if not log.is_file():
        return 0.0
    text = log.read_text(encoding="utf-8", errors="replace")
    headers = list(ATTEMPT_HEADER.finditer(text))
    if not headers:
        return 0.0
    after_last = text[headers[-1].end() :]
    if not ATTEMPT_RAN.search(after_last) and not STEP_FINISHED.search(after_last):
        started = datetime.fromisoformat(headers[-1].group(1)).timestamp()
        ran = max(0.0, log.stat().st_mtime - started)
        closing = f"== the attempt above ran {ran:.0f} s, until its last output (killed)\n"
        with open(log, "a", encoding="utf-8") as handle:
            handle.write(("" if text.endswith("\n") else "\n") + closing)
        text += closing
    finishes = list(STEP_FINISHED.finditer(text))
    since = text[finishes[-1].end() :] if finishes else text
    return sum(float(match.group(1)) for match in ATTEMPT_RAN.finditer(since))


def run_step(step: Step, launcher: Sequence[str] = ()) -> dict:
    """Run one step unless it is complete; its marker's record either way.

    Raises:
        StepFailed: the command exited with an error (or could not start).
    """
    record = step.finished()
    if record is not None:
        return dict(record, skipped=True)
    return _execute(step, launcher)


def run_steps(
    steps: Sequence[Step],
    launcher: Sequence[str] = (),
    announce: Callable[[str], None] = print,
) -> List[dict]:
    """Run the steps in order, skipping the complete ones; stops at the first failure."""
    records = []
    for number, step in enumerate(steps, start=1):
        prefix = f"[{number}/{len(steps)}] {step.system}: {step.name}"
        record = step.finished()
        if record is not None:
            announce(f"{prefix} (done earlier)")
            records.append(dict(record, skipped=True))
            continue
        announce(f"{prefix} (log: {step.log})")
        record = _execute(step, launcher)
        announce(f"{prefix} finished in {record['wall_seconds']:.0f} s")
        records.append(record)
    return records


def _execute(step: Step, launcher: Sequence[str]) -> dict:
    """Run the step's command, log appended, and write its marker once it exits 0."""
    if step.resumable:
        step.check_unfinished_attempt()
    step.directory.mkdir(parents=True, exist_ok=True)
    earlier = earlier_attempts_seconds(step.log)
    command = [*launcher, *step.command]
    started = time.monotonic()
    with open(step.log, "a", encoding="utf-8") as log:
        log.write(f"== {_now()} {step.command_line()}\n")
        log.flush()
        try:
            status = subprocess.run(
                command, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **step.env}
            ).returncode
        except OSError as error:
            log.write("== the attempt above ran 0 s (it could not start)\n")
            raise StepFailed(
                f"grid stopped: {step.system}, step '{step.name}' could not start ({error}); "
                f"command: {step.command_line()}"
            ) from error
        ran = time.monotonic() - started
        if status != 0:
            tail = _tail(step.log)
            log.write(f"== the attempt above ran {ran:.0f} s (exit status {status})\n")
            raise StepFailed(
                f"grid stopped: {step.system}, step '{step.name}' failed (exit status {status}); "
                f"log: {step.log}\n--- last lines of the log ---\n{tail}"
            )
        log.write(f"== finished after {earlier + ran:.0f} s in all\n")
    record = {
        "command": step.command_line(),
        "wall_seconds": round(earlier + ran, 3),  # every attempt's, a resumed run's in all
        "finished": _now(),
    }
    atomic_write_json(step.marker, record)
    return dict(record, skipped=False)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    text = path.read_text(encoding="utf-8", errors="replace").splitlines()
    return "\n".join(text[-lines:])


def python_command() -> str:
    """The Python of the grid's `python -m` steps: the one the project's scripts use, i.e.
    FAIRSEQ_STRUCT_TOOLS's when that names another environment's bin/ (scripts/lib/tools.sh),
    else this interpreter."""
    tools = os.environ.get("FAIRSEQ_STRUCT_TOOLS")
    return str(Path(tools) / "python") if tools else sys.executable


def scripts_dir() -> Path:
    """The checkout's scripts/ (the grid runs them).

    Raises:
        GridError: the package is not run from a checkout.
    """
    scripts = Path(__file__).resolve().parents[2] / "scripts"
    if not (scripts / "train-en-tr.sh").is_file():
        raise GridError(
            f"the grid runs the project's scripts, which are not beside the package ({scripts}): "
            "run it from a clone of fairseq-struct (make venv installs it there)"
        )
    return scripts
