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
from typing import Dict, List

import pytest
from conftest import REPO_ROOT

from fairseq_struct.commands import COMMANDS

sys.path.insert(0, str(REPO_ROOT / "benchmarks"))
from bench_command_startup import model_free_runs  # noqa: E402  (the runs it times)

# A module of torch or fairseq loaded (an import of the bare name that fails, as deepsig tries
# one, loads nothing).
HEAVY = re.compile(r"^import time:.*\|\s+(torch|fairseq)\.\S+$", re.M)


def with_import_log(arguments: List[str], cwd: Path) -> subprocess.CompletedProcess:
    """`fairseq-struct ARGUMENTS` in a new process, its import log in its standard error."""
    command = [sys.executable, "-X", "importtime", "-m", "fairseq_struct", *arguments]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=300)


def heavy_imports(arguments: List[str], cwd: Path) -> List[str]:
    """The torch and fairseq imports of a run of `fairseq-struct ARGUMENTS`, which must succeed."""
    result = with_import_log(arguments, cwd)
    assert result.returncode == 0, f"{arguments}: {result.stderr[-3000:]}"
    return HEAVY.findall(result.stderr)


def commands_with_heavy_imports(runs: Dict[str, List[str]], cwd: Path) -> Dict[str, List[str]]:
    """command -> the torch and fairseq imports of `fairseq-struct COMMAND ARGUMENTS`, for the
    commands that made any (two at a time)."""
    with ThreadPoolExecutor(max_workers=2) as pool:
        found = pool.map(lambda name: heavy_imports([name, *runs[name]], cwd), runs)
        return {name: imports for name, imports in zip(runs, found) if imports}


def test_the_check_sees_torch_where_a_command_loads_it(tmp_path):
    """The import log names torch when a run loads it: average-checkpoints reading a file."""
    (tmp_path / "a.pt").write_bytes(b"not a checkpoint")
    arguments = ["--inputs", str(tmp_path / "a.pt"), "--output", str(tmp_path / "b.pt")]
    result = with_import_log(["average-checkpoints", *arguments], tmp_path)
    assert "torch" in HEAVY.findall(result.stderr) and result.returncode == 1


def test_every_help_starts_without_torch_or_fairseq(tmp_path):
    helps = {name: ["--help"] for name in COMMANDS}
    assert commands_with_heavy_imports(helps, tmp_path) == {}


@pytest.fixture(scope="module")
def demo_corpus(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("demo")
    arguments = ["demo-corpus", "--out-dir", str(out), "--train", "300"]
    assert heavy_imports([*arguments, "--valid", "30", "--test", "30"], out) == []
    return out


def test_the_commands_that_need_no_model_run_without_torch_or_fairseq(demo_corpus, tmp_path):
    runs = model_free_runs(demo_corpus, tmp_path)
    assert commands_with_heavy_imports(runs, tmp_path) == {}
    assert (tmp_path / "prepared" / "spm.model").is_file()  # the runs did their work
    assert (tmp_path / "splits").is_dir() and (tmp_path / "buckets").is_dir()
