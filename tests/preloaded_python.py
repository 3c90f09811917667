"""fairseq's command lines in new processes without their start-up: a process that has imported
torch and fairseq once forks a child for every command (as Python's `forkserver` does).

`fairseq-train`, `fairseq-preprocess`, `python -m fairseq_struct...` spend about 3 s of CPU
importing torch, fairseq and scikit-learn (which fairseq imports) before they read an argument;
the suite starts dozens of them. Every one of those programs imports torch and fairseq first
anyway, so a child forked after those imports runs the same code in a process of its own (own
memory, own globals, own exit status, output in files), minus the import time. Only those
programs go through here (`PreloadedPython.handles`); a command that sets an interpreter option
a fork cannot take (a hash seed, a path, another thread library setting) runs as a plain
subprocess, as does everything else.

The server process never computes (no thread pool exists when it forks); each child sets its
thread count from OMP_NUM_THREADS, reseeds its random generators, and exits like an interpreter
(atexit handlers, logging shutdown, flushed streams).
"""

import json
import os
import select
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional

# Read by an interpreter at start-up, so a forked child cannot take another value: a command
# whose environment differs from the server's in one of these runs as a plain subprocess.
# OMP_NUM_THREADS is the exception: the child sets torch's thread count from it.
_STARTUP_VARIABLES = ("PYTHON", "OMP_", "MKL_", "KMP_", "GOMP_", "LD_", "MALLOC")
_CHILD_SETS_ITSELF = ("OMP_NUM_THREADS",)
_FAIRSEQ_PROGRAMS = ("fairseq-train", "fairseq-preprocess", "fairseq-generate", "fairseq-validate")
# fairseq_cli/train.py sets up the root logger (its format, on stdout) before it imports fairseq,
# whose import sets it up otherwise (a task module calls logging.basicConfig: stderr, DEBUG); the
# other programs import fairseq first, so they keep what fairseq's import made.
_LOGGING_BEFORE_FAIRSEQ = ("fairseq-train",)
_PRELOADED_MODULES = ("fairseq_struct.",)
# The project's benchmarks (`python benchmarks/bench_*.py`): each imports torch and fairseq.
_PRELOADED_SCRIPTS_DIR, _PRELOADED_SCRIPTS_PREFIX = "benchmarks", "bench_"

_SERVER = r"""
import json, logging, os, sys

# The root logger before fairseq's import set it up, for the programs that set it up first.
ROOT = logging.getLogger()
BEFORE_FAIRSEQ = (list(ROOT.handlers), ROOT.level)

import torch  # noqa: F401
import fairseq  # noqa: F401

requests, replies = sys.stdin, sys.stdout


def run_child(request):
    import atexit, random, runpy, traceback

    import numpy

    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    for fd, path in ((1, request["stdout"]), (2, request["stderr"])):
        os.dup2(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), fd)
    sys.stdin = open(0, encoding="utf-8", closefd=False)
    sys.stdout = open(1, "w", encoding="utf-8", closefd=False)
    sys.stderr = open(2, "w", buffering=1, encoding="utf-8", errors="backslashreplace", closefd=False)
    sys.__stdout__, sys.__stderr__ = sys.stdout, sys.stderr
    if request["logging_before_fairseq"]:
        ROOT.handlers[:] = BEFORE_FAIRSEQ[0]
        ROOT.setLevel(BEFORE_FAIRSEQ[1])
    for handler in ROOT.handlers:  # fairseq's, made on the server's stderr
        if isinstance(handler, logging.StreamHandler) and not isinstance(handler, logging.FileHandler):
            handler.setStream(sys.stderr)
    threads = os.environ.get("OMP_NUM_THREADS")
    if threads:
        torch.set_num_threads(int(threads))
    random.seed()
    numpy.random.seed()
    torch.seed()
    argv = request["argv"]
    code = 0
    try:
        if argv[0] == "-m":
            sys.argv = argv[1:]
            sys.path.insert(0, os.getcwd())
            runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        else:
            sys.argv = argv
            sys.path.insert(0, os.path.dirname(os.path.abspath(argv[0])))
            runpy.run_path(argv[0], run_name="__main__")
    except SystemExit as stop:
        if stop.code is None:
            code = 0
        elif isinstance(stop.code, int):
            code = stop.code
        else:
            print(stop.code, file=sys.stderr)
            code = 1
    except BaseException:
        traceback.print_exc()
        code = 1
    try:
        atexit._run_exitfuncs()
        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)


for line in requests:
    request = json.loads(line)
    pid = os.fork()
    if pid == 0:
        run_child(request)
    replies.write(json.dumps({"pid": pid}) + "\n")
    replies.flush()
    _, status = os.waitpid(pid, 0)
    replies.write(json.dumps({"returncode": os.waitstatus_to_exitcode(status)}) + "\n")
    replies.flush()
"""


class PreloadedPython:
    """One server per test process, started at the first command it can run; `env` is the
    environment it starts with (its start-up variables are those of every command it runs)."""

    def __init__(self, python: str, env: Dict[str, str]) -> None:
        self.python = python
        self.env = env
        self.startup_settings = startup_settings(env)
        self.bin = Path(python).parent
        self.server: Optional[subprocess.Popen] = None
        self.pending = b""

    def handles(self, args: List, env: Dict[str, str]) -> bool:
        """A fairseq program, `python -m fairseq_struct...` or one of the project's benchmark
        scripts, of this interpreter, with the server's interpreter settings."""
        if startup_settings(env) != self.startup_settings:
            return False
        program = Path(str(args[0]))
        if program.parent == self.bin and program.name in _FAIRSEQ_PROGRAMS:
            return True
        if str(program) != self.python or len(args) < 2:
            return False
        if args[1] == "-m":
            return len(args) > 2 and str(args[2]).startswith(_PRELOADED_MODULES)
        script = Path(str(args[1]))
        return (
            script.parent.name == _PRELOADED_SCRIPTS_DIR
            and script.name.startswith(_PRELOADED_SCRIPTS_PREFIX)
            and script.suffix == ".py"
        )

    def run(
        self, args: List, cwd: Path, env: Dict[str, str], timeout: float
    ) -> subprocess.CompletedProcess:
        """`args` in a forked child: what `subprocess.run(args, cwd=cwd, env=env,
        capture_output=True, text=True, timeout=timeout)` gives."""
        args = [str(arg) for arg in args]
        argv = args[1:] if args[0] == self.python else args
        with tempfile.TemporaryDirectory(prefix="preloaded-") as scratch:
            out, err = Path(scratch, "stdout"), Path(scratch, "stderr")
            request = {"argv": argv, "cwd": str(cwd), "env": env}
            request["logging_before_fairseq"] = Path(args[0]).name in _LOGGING_BEFORE_FAIRSEQ
            request.update(stdout=str(out), stderr=str(err))
            server = self._server()
            server.stdin.write(json.dumps(request).encode("utf-8") + b"\n")
            server.stdin.flush()
            child = self._reply(None)["pid"]
            try:
                returncode = self._reply(timeout)["returncode"]
            except subprocess.TimeoutExpired:
                os.kill(child, signal.SIGKILL)
                self._reply(None)
                raise subprocess.TimeoutExpired(args, timeout)
            stdout = out.read_text(encoding="utf-8", errors="replace")
            stderr = err.read_text(encoding="utf-8", errors="replace")
        return subprocess.CompletedProcess(args, returncode, stdout, stderr)

    def close(self) -> None:
        if self.server is not None and self.server.poll() is None:
            self.server.stdin.close()
            self.server.wait(timeout=60)

    def _server(self) -> subprocess.Popen:
        if self.server is None or self.server.poll() is not None:
            self.pending = b""
            self.server = subprocess.Popen(
                [self.python, "-c", _SERVER],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                env=self.env,
            )
        return self.server

    def _reply(self, timeout: Optional[float]) -> dict:
        """The server's next line; read from the pipe unbuffered, so that `select` sees a line
        that has arrived (a buffered reader may hold it already)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        stream = self.server.stdout.fileno()
        while b"\n" not in self.pending:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not select.select([stream], [], [], left)[0]:
                raise subprocess.TimeoutExpired("preloaded python", timeout)
            chunk = os.read(stream, 1 << 16)
            if not chunk:
                raise RuntimeError(f"the preloaded Python server ended ({self.server.wait()})")
            self.pending += chunk
        line, self.pending = self.pending.split(b"\n", 1)
        return json.loads(line)


def startup_settings(env: Dict[str, str]) -> Dict[str, str]:
    """The variables of `env` that a forked child cannot take from its request."""
    return {
        key: value
        for key, value in env.items()
        if key.startswith(_STARTUP_VARIABLES) and key not in _CHILD_SETS_ITSELF
    }
