"""Commands start in a blink: `--help` of every command, and a small real run of each command
that needs no model (scoring, statistics, complexity, corpus cleaning and splits, SentencePiece
preparation, ASO, the demo corpora), import neither torch nor fairseq. Each runs as a user runs
it, a new `python -X importtime -m fairseq_struct COMMAND ...` process whose import log is read.
(benchmarks/bench_command_startup.py measures the CPU seconds.)"""

import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import List

import pytest
from conftest import REPO_ROOT

from fairseq_struct.commands import COMMANDS

sys.path.insert(0, str(REPO_ROOT / "benchmarks"))
from bench_command_startup import model_free_runs  # noqa: E402  (the runs it times)

# A module of torch or fairseq loaded (an import of the bare name that fails, as deepsig tries
# one, loads nothing).
HEAVY = re.compile(r"^import time:.*\|\s+(torch|fairseq)\.\S+$", re.M)


def heavy_imports(arguments: List[str], cwd: Path) -> List[str]:
    """Run `fairseq-struct ARGUMENTS` in a new process; the torch and fairseq imports it made."""
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "fairseq_struct", *arguments],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, f"{arguments}: {result.stderr[-3000:]}"
    return HEAVY.findall(result.stderr)


def test_the_check_sees_torch_where_a_command_loads_it(tmp_path):
    """The import log names torch when a run loads it: average-checkpoints reading a file."""
    (tmp_path / "a.pt").write_bytes(b"not a checkpoint")
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "fairseq_struct", "average-checkpoints",
         "--inputs", str(tmp_path / "a.pt"), "--output", str(tmp_path / "b.pt")],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert "torch" in HEAVY.findall(result.stderr) and result.returncode == 1


def test_every_help_starts_without_torch_or_fairseq(tmp_path):
    with ThreadPoolExecutor(max_workers=2) as pool:
        found = dict(
            zip(
                COMMANDS, pool.map(lambda name: heavy_imports([name, "--help"], tmp_path), COMMANDS)
            )
        )
    assert {name: imports for name, imports in found.items() if imports} == {}


@pytest.fixture(scope="module")
def demo_corpus(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("demo")
    arguments = ["demo-corpus", "--out-dir", str(out), "--train", "300"]
    assert heavy_imports([*arguments, "--valid", "30", "--test", "30"], out) == []
    return out


def test_the_commands_that_need_no_model_run_without_torch_or_fairseq(demo_corpus, tmp_path):
    runs = model_free_runs(demo_corpus, tmp_path)
    with ThreadPoolExecutor(max_workers=2) as pool:
        found = dict(
            zip(runs, pool.map(lambda name: heavy_imports([name, *runs[name]], tmp_path), runs))
        )
    assert {name: imports for name, imports in found.items() if imports} == {}
    assert (tmp_path / "prepared" / "spm.model").is_file()  # the runs did their work
    assert (tmp_path / "splits").is_dir() and (tmp_path / "buckets").is_dir()
