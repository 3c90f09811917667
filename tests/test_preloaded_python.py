"""The suite's preloaded interpreter (tests/preloaded_python.py) gives what a new process gives:
exit status, standard output and error, working directory and environment; a command it cannot
run the same way is left to a plain subprocess."""

import os
import subprocess
import sys

import pytest
from conftest import venv_tool
from preloaded_python import PreloadedPython

ENV = dict(os.environ, OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore")


@pytest.fixture(scope="module")
def preloaded():
    server = PreloadedPython(sys.executable, ENV)
    yield server
    server.close()


def _program_lines(stderr: str) -> list:
    """Standard error without the frames of the code that starts the program (runpy's, and the
    server's own), which differ between the two ways."""
    return [line for line in stderr.splitlines() if not line.startswith('  File "<')]


def test_a_command_gives_what_a_new_process_gives(preloaded, tmp_path):
    (tmp_path / "hyp.txt").write_text("a cat sat\n", encoding="utf-8")
    (tmp_path / "ref.txt").write_text("a cat sat down\n", encoding="utf-8")
    args = [sys.executable, "-m", "fairseq_struct.eval.score", "--hyp", "hyp.txt", "--ref"]
    for arguments in (args + ["ref.txt"], args + ["missing.txt"]):
        assert preloaded.handles(arguments, ENV)
        forked = preloaded.run(arguments, cwd=tmp_path, env=ENV, timeout=120)
        fresh = subprocess.run(arguments, cwd=tmp_path, env=ENV, capture_output=True, text=True)
        assert (forked.returncode, forked.stdout) == (fresh.returncode, fresh.stdout)
        assert _program_lines(forked.stderr) == _program_lines(fresh.stderr)
    assert fresh.returncode != 0 and "missing.txt" in fresh.stderr


def test_fairseq_programs_are_forked_and_the_environment_is_the_commands(preloaded, tmp_path):
    preprocess = venv_tool("fairseq-preprocess")
    assert preloaded.handles([preprocess, "--help"], ENV)
    result = preloaded.run([preprocess, "--help"], cwd=tmp_path, env=ENV, timeout=120)
    assert result.returncode == 0 and "--trainpref" in result.stdout
    # The child runs in the command's directory with the command's variables.
    env = dict(ENV, FAIRSEQ_STRUCT_PROBE="42")
    code = "import os, sys; print(os.getcwd(), os.environ['FAIRSEQ_STRUCT_PROBE']); sys.exit(3)"
    script = tmp_path / "probe.py"
    script.write_text(code, encoding="utf-8")
    result = preloaded.run([sys.executable, "-m", "probe"], cwd=tmp_path, env=env, timeout=60)
    assert (result.returncode, result.stdout) == (3, f"{tmp_path} 42\n")


def test_what_a_fork_cannot_take_is_left_to_a_new_process(preloaded):
    module = [sys.executable, "-m", "fairseq_struct.eval.score"]
    assert not preloaded.handles(module, dict(ENV, PYTHONHASHSEED="0"))  # read at start-up
    assert preloaded.handles(module, dict(ENV, OMP_NUM_THREADS="2"))  # the child sets it
    assert not preloaded.handles([sys.executable, "-m", "sacrebleu"], ENV)  # no fairseq in it
    assert not preloaded.handles([venv_tool("torchrun"), "x.py"], ENV)
    assert preloaded.handles([sys.executable, "benchmarks/bench_prepare_scale.py"], ENV)
    assert not preloaded.handles([sys.executable, "scripts/other.py"], ENV)


def test_a_script_runs_as_main_with_its_directory_on_the_path(preloaded, tmp_path):
    scripts = tmp_path / "benchmarks"
    scripts.mkdir()
    (scripts / "helper_module.py").write_text("VALUE = 7\n", encoding="utf-8")
    code = "import sys, helper_module\nif __name__ == '__main__':\n    print(helper_module.VALUE, sys.argv[1:])\n"
    (scripts / "bench_probe.py").write_text(code, encoding="utf-8")
    args = [sys.executable, "benchmarks/bench_probe.py", "--x", "1"]
    assert preloaded.handles(args, ENV)
    forked = preloaded.run(args, cwd=tmp_path, env=ENV, timeout=60)
    fresh = subprocess.run(args, cwd=tmp_path, env=ENV, capture_output=True, text=True)
    assert (forked.returncode, forked.stdout) == (fresh.returncode, fresh.stdout)
    assert forked.stdout == "7 ['--x', '1']\n"


def test_a_command_past_its_timeout_is_killed(preloaded, tmp_path):
    (tmp_path / "sleeper.py").write_text("import time\ntime.sleep(60)\n", encoding="utf-8")
    with pytest.raises(subprocess.TimeoutExpired):
        preloaded.run([sys.executable, "-m", "sleeper"], cwd=tmp_path, env=ENV, timeout=1)
    again = preloaded.run(
        [sys.executable, "-m", "fairseq_struct.eval.score", "--help"],
        cwd=tmp_path,
        env=ENV,
        timeout=60,
    )
    assert again.returncode == 0  # the server goes on


def test_a_fairseq_program_logs_as_in_a_new_process(preloaded, tmp_path):
    """The same lines, in the same format, on the same stream (fairseq-preprocess logs through
    what fairseq's import sets up; fairseq-train sets up its own first: the half-precision
    tests read its lines)."""
    (tmp_path / "train.txt").write_text("a b c\nb c d\n", encoding="utf-8")
    outputs = []
    for way in ("forked", "fresh"):
        args = [venv_tool("fairseq-preprocess"), "--only-source", "--trainpref", "train.txt"]
        args += ["--destdir", way, "--workers", "1"]
        if way == "forked":
            result = preloaded.run(args, cwd=tmp_path, env=ENV, timeout=120)
        else:
            result = subprocess.run(args, cwd=tmp_path, env=ENV, capture_output=True, text=True)
        assert result.returncode == 0, result.stderr
        lines = [line.split(" | ", 1)[-1] for line in result.stdout.splitlines()]  # no time
        outputs.append(
            ([line.replace(way, "OUT") for line in lines], result.stderr.replace(way, "OUT"))
        )
    assert outputs[0] == outputs[1]
    assert "INFO:fairseq_cli.preprocess:" in outputs[0][1]
