"""The suite's preloaded interpreter (tests/preloaded_python.py) gives what a new process gives:
exit status, standard output and error, working directory and environment; a command it cannot
run the same way is left to a plain subprocess."""

import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import preloaded_python
import pytest
from conftest import preloaded_server, script_environment, venv_tool
from preloaded_python import PreloadedPython

ENV = dict(os.environ, OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore")


@pytest.fixture(scope="module")
def preloaded() -> PreloadedPython:
    """The session's server for ENV's start-up settings (conftest's, shared by the workers): the
    one the suite's commands run in."""
    return preloaded_server(ENV)


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


def test_a_started_server_takes_connections_at_once(monkeypatch):
    """`start` returns when the socket's path exists, and a caller connects at once: the path must
    not name a socket that is bound but not yet listening (ECONNREFUSED). A server whose listen()
    comes a second after its bind() shows the window that is otherwise a few microseconds wide."""
    slow_listen = (
        "import socket as _s, time as _t\n"
        "_listen = _s.socket.listen\n"
        "_s.socket.listen = lambda self, *a: (_t.sleep(1.0), _listen(self, *a))[1]\n"
    )
    monkeypatch.setattr(preloaded_python, "_SERVER", slow_listen + preloaded_python._SERVER)
    with tempfile.TemporaryDirectory(prefix="preloaded-test-") as directory:
        server = PreloadedPython(sys.executable, ENV, Path(directory))
        try:
            server.start()
            connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            connection.connect(str(server.socket))  # ConnectionRefusedError before the fix
            connection.close()
        finally:
            server.server.kill()  # not worth its imports of torch and fairseq
            server.close()


def test_a_server_is_shared_and_ends_after_its_last_holder(monkeypatch, tmp_path):
    """Two suite processes with one directory (pytest-xdist's workers): the second holds the
    server the first started and runs commands in it; the first's `close` waits until the holder
    has released it, and then the server has ended. (The server without fairseq's imports: its
    lifetime does not depend on them.)"""
    light = preloaded_python._SERVER
    for heavy in (
        "fairseq",
        "torch.fx.experimental.symbolic_shapes",
        "torch._dynamo",
        "sacremoses",
    ):
        line = f"import {heavy}  # noqa: F401\n"
        assert line in light  # the server's imports as this test knows them
        light = light.replace(line, "")
    monkeypatch.setattr(preloaded_python, "_SERVER", light)
    answer = [sys.executable, "-c", "print(6 * 7)"]
    with tempfile.TemporaryDirectory(prefix="preloaded-test-") as directory:
        first = PreloadedPython(sys.executable, ENV, Path(directory))
        second = PreloadedPython(sys.executable, ENV, Path(directory))
        first.start()
        second.start()
        assert first.server is not None and second.server is None and second.pid == first.pid
        assert second.run(answer, cwd=tmp_path, env=ENV, timeout=60).stdout == "42\n"
        closing = threading.Thread(target=first.close)
        closing.start()
        closing.join(timeout=2)
        assert closing.is_alive() and first.server.poll() is None  # held: it waits
        assert second.run(answer, cwd=tmp_path, env=ENV, timeout=60).stdout == "42\n"
        second.release()
        closing.join(timeout=60)
        assert not closing.is_alive() and first.server.returncode == 0
        assert not first.socket.exists()


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


# ------------------------------------------------------------- the scripts' stand-ins
# What the project's scripts run under test (conftest.script_environment): `python` and fairseq's
# programs of FAIRSEQ_STRUCT_TOOLS are stand-ins that fork the command from the server.

PROGRAM = """
import os, sys
print(sys.argv, os.getcwd(), os.environ.get("FAIRSEQ_STRUCT_PROBE"), sys.path[0] in ("", os.getcwd()))
print("read:", sys.stdin.read().strip())
print("to stderr", file=sys.stderr)
sys.exit(int(os.environ.get("FAIRSEQ_STRUCT_PROBE", "0")))
"""


def _both_ways(args: list, tmp_path, env: dict, stdin: str = "") -> tuple:
    """The stand-in's and the real program's (exit status, stdout, stderr) for `args`."""
    stand_ins = Path(env["FAIRSEQ_STRUCT_TOOLS"])
    results = []
    for tools in (stand_ins, Path(sys.executable).parent):
        program = str(tools / args[0])
        result = subprocess.run(
            [program, *args[1:]], cwd=tmp_path, env=env, input=stdin, capture_output=True, text=True
        )
        results.append((result.returncode, result.stdout, _program_lines(result.stderr)))
    return results


def test_a_stand_in_gives_what_the_program_gives(tmp_path):
    env = script_environment({"FAIRSEQ_STRUCT_PROBE": "3"})
    (tmp_path / "program.py").write_text(PROGRAM, encoding="utf-8")
    (tmp_path / "hyp.txt").write_text("a cat sat\n", encoding="utf-8")
    outcomes = []
    for args in (
        ["python3", "program.py", "--x", "1"],
        ["python", "-c", PROGRAM, "--x"],
        ["python3", "-", "--y"],
        ["python3", "-m", "program", "z"],
        ["python3", "-m", "fairseq_struct.eval.score", "--hyp", "hyp.txt", "--ref", "none.txt"],
        ["fairseq-preprocess", "--help"],
        ["python3", "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"],
    ):
        stdin = PROGRAM if args[1] == "-" else "some input"
        stand_in, real = _both_ways(args, tmp_path, env, stdin)
        assert stand_in == real, args
        outcomes.append(stand_in)
    for returncode, stdout, stderr in outcomes[:4]:
        assert returncode == 3 and "read:" in stdout and "True" in stdout, stdout
        assert "to stderr" in stderr
    assert (
        outcomes[0][1].startswith("['program.py', '--x', '1']")
        and "read: some input" in outcomes[0][1]
    )
    assert outcomes[2][1].startswith("['-', '--y']")  # the program was its standard input
    assert outcomes[4][0] == 1 and "none.txt" in "".join(outcomes[4][2])  # a missing file
    assert outcomes[5][0] == 0 and "--trainpref" in outcomes[5][1]
    assert outcomes[6][0] == -signal.SIGKILL  # a program that SIGKILL ended


def _forked_children(server_pid: int) -> set:
    children = Path(f"/proc/{server_pid}/task/{server_pid}/children").read_text().split()
    return {int(pid) for pid in children}


def _wait_for(condition, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "waited in vain"
        time.sleep(0.05)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGKILL])
def test_a_stand_in_passes_on_signals_and_its_child_ends_with_it(signum, tmp_path):
    """A signal to the stand-in (a script's process group killed, Ctrl-C) reaches the command;
    SIGKILL, which the stand-in cannot pass on, ends the command when the stand-in is gone."""
    env = script_environment(stand_ins=True)
    server = preloaded_server(env).pid
    before = _forked_children(server)
    started = tmp_path / "started"
    sleeper = f"import pathlib, time\npathlib.Path({str(started)!r}).touch()\ntime.sleep(120)\n"
    stand_in = Path(env["FAIRSEQ_STRUCT_TOOLS"]) / "python3"
    process = subprocess.Popen([str(stand_in), "-c", sleeper], env=env)
    _wait_for(started.exists)
    (child,) = _forked_children(server) - before
    process.send_signal(signum)
    assert process.wait(timeout=30) == -signum  # ended as the real program would be
    _wait_for(lambda: child not in _forked_children(server))


def test_what_the_server_cannot_run_runs_as_the_real_program(tmp_path):
    env = script_environment(stand_ins=True)
    code = "import sys; print(sys.stdout.write_through)"
    stand_in, real = _both_ways(["python3", "-u", "-c", code], tmp_path, env)
    assert stand_in == real == (0, "True\n", [])  # an interpreter option
    seeded = dict(env, PYTHONHASHSEED="17")  # no server has this seed
    code = "print(hash('a'))"
    stand_in, real = _both_ways(["python3", "-c", code], tmp_path, seeded)
    assert stand_in == real
    assert not preloaded_server(seeded).handles([sys.executable, "-m", "fairseq_struct.x"], env)


def test_the_suite_imports_its_conftest_under_one_name():
    """`from tests.conftest import ...` would load a second copy of conftest (pytest loads it as
    `conftest`), with preloaded servers of its own that start again and are never closed."""
    pattern = re.compile(r"^\s*(from|import)\s+tests\.conftest\b", re.MULTILINE)
    tests = Path(__file__).resolve().parent
    second_copies = [
        str(path.relative_to(tests))
        for path in sorted(tests.rglob("*.py"))
        if pattern.search(path.read_text(encoding="utf-8"))
    ]
    assert second_copies == []
