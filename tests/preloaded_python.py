"""fairseq's command lines in new processes without their start-up: a process that has imported
torch and fairseq once forks a child for every command (as Python's `forkserver` does).

`fairseq-train`, `fairseq-preprocess`, `python -m fairseq_struct...` spend about 3 s of CPU
importing torch, fairseq and scikit-learn (which fairseq imports) before they read an argument;
the suite starts dozens of them, and the project's scripts dozens more. Every one of those
programs imports torch and fairseq first anyway, so a child forked after those imports runs the
same code in a process of its own (own memory, own globals, own exit status, its caller's
standard streams), minus the import time.

Two kinds of callers reach the server through its Unix socket: the suite's `run_tool`
(`PreloadedPython.run`, output in files), and the stand-ins for `python` and fairseq's programs
that the scripts find through `FAIRSEQ_STRUCT_TOOLS` (`preloaded_tool.py`, which passes on its
own standard streams and signals). A command that sets an interpreter option a fork cannot take
(a hash seed, another thread library setting, `python -u`) runs as a plain process instead.

The server process never computes (no thread pool exists when it forks); each child makes a
process group of its own, sets its thread count from OMP_NUM_THREADS and its module path from
PYTHONPATH, reseeds its random generators, and exits like an interpreter (atexit handlers,
logging shutdown, flushed streams). A caller that goes away (killed, or past its timeout) takes
the child's process group with it, as a terminal or a cluster's kill takes a real process.
"""

import fcntl
import hashlib
import json
import os
import select
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Dict, Iterator, List, Optional

# Read by an interpreter at start-up, so a forked child cannot take another value: a command
# whose environment differs from the server's in one of these runs as a plain process.
# OMP_NUM_THREADS and PYTHONPATH are the exceptions: the child sets torch's thread count and its
# module path from them.
_STARTUP_VARIABLES = ("PYTHON", "OMP_", "MKL_", "KMP_", "GOMP_", "LD_", "MALLOC")
_CHILD_SETS_ITSELF = ("OMP_NUM_THREADS", "PYTHONPATH")
FAIRSEQ_PROGRAMS = (
    "fairseq-train", "fairseq-preprocess", "fairseq-generate", "fairseq-validate",
    "fairseq-interactive",
)  # fmt: skip
# fairseq_cli/train.py sets up the root logger (its format, on stdout) before it imports fairseq,
# whose import sets it up otherwise (a task module calls logging.basicConfig: stderr, DEBUG); the
# other programs import fairseq first, so they keep what fairseq's import made.
LOGGING_BEFORE_FAIRSEQ = ("fairseq-train",)
_PRELOADED_MODULES = ("fairseq_struct.",)
# The project's benchmarks (`python benchmarks/bench_*.py`): each imports torch and fairseq.
_PRELOADED_SCRIPTS_DIR, _PRELOADED_SCRIPTS_PREFIX = "benchmarks", "bench_"

_SERVER = r"""
import json, logging, os, select, signal, socket, sys

# The root logger before fairseq's import set it up, for the programs that set it up first.
ROOT = logging.getLogger()
BEFORE_FAIRSEQ = (list(ROOT.handlers), ROOT.level)

# Listening before the imports: a caller that comes early waits in the backlog. The socket is
# bound under another name and renamed once it listens, so that its path never names a socket
# that refuses connections (a caller between bind and listen would get ECONNREFUSED).
listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
listener.bind(sys.argv[2])  # binding_path(sys.argv[1])
listener.listen(128)
os.rename(sys.argv[2], sys.argv[1])

import torch  # noqa: F401
import fairseq  # noqa: F401
# What torch imports lazily in nearly every command, about 1.5 s of CPU each would spend again:
# symbolic_shapes and sympy's 470 modules at the first torch._check (any attention with a
# padding mask), torch._dynamo at the first torch.optim.Optimizer (every fairseq-train).
import torch.fx.experimental.symbolic_shapes  # noqa: F401
import torch._dynamo  # noqa: F401
# The Moses tokenizer of the word preparations compiles its patterns on import (0.7-1.2 s).
# (Not zemberek: its import adds a handler to the root logger, which every command would see.)
import sacremoses  # noqa: F401
# What the commands of this server's start-up settings all build first (PreloadedPython's preload).
exec(sys.argv[3])

# What a child need not redo. The imports' objects (a million or so) go to the collector's
# permanent generation: a child's full collection would walk them all, writing to each object's
# header and so copying nearly every page it shares with the server (0.3 s of CPU each time; half
# a second of a 20-update fairseq-train). And torch's 174 custom-op libraries are not
# unregistered one by one at a child's exit (30 ms each child): the process ends right after.
import gc, weakref
import torch.library

gc.collect()
gc.freeze()
for finalizer, info in list(weakref.finalize._registry.items()):
    if info.func is torch.library._del_library:
        finalizer.atexit = False

BASE_PATH = sys.path[1:]  # sys.path[0] is '' (python -c): each command sets its own


def receive(conn):
    data, fds = b"", []
    while not data.endswith(b"\n"):
        chunk, new_fds, _, _ = socket.recv_fds(conn, 1 << 20, 3)
        fds += new_fds
        if not chunk:
            raise EOFError
        data += chunk
    return json.loads(data), fds


def run_program(argv):
    import builtins, runpy, types

    if argv[0] == "-m":
        sys.argv = argv[1:]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
    elif argv[0] in ("-c", "-"):
        source = argv[1] if argv[0] == "-c" else sys.stdin.read()
        sys.argv = ["-c", *argv[2:]] if argv[0] == "-c" else argv
        main = types.ModuleType("__main__")
        main.__builtins__ = builtins
        sys.modules["__main__"] = main
        name = "<string>" if argv[0] == "-c" else "<stdin>"
        exec(compile(source, name, "exec"), main.__dict__)
    else:
        sys.argv = argv
        runpy.run_path(argv[0], run_name="__main__")


def module_path(argv, env):
    if argv[0] == "-m":
        first = os.getcwd()
    elif argv[0] in ("-c", "-"):
        first = ""
    else:
        first = os.path.dirname(os.path.realpath(argv[0]))
    extra = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p not in BASE_PATH]
    return [first, *extra, *BASE_PATH]


def run_child(request, fds, inherited):
    import atexit, random, traceback

    import numpy

    os.setpgid(0, 0)
    for fd in inherited:
        os.close(fd)
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.stdin = open(0, encoding="utf-8", closefd=False)
    sys.stdout = open(1, "w", encoding="utf-8", closefd=False)
    sys.stderr = open(2, "w", buffering=1, encoding="utf-8", errors="backslashreplace", closefd=False)
    sys.__stdin__, sys.__stdout__, sys.__stderr__ = sys.stdin, sys.stdout, sys.stderr
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
    sys.path[:] = module_path(argv, request["env"])
    code = 0
    try:
        run_program(argv)
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


def kill_group(pid, signum):
    try:
        os.killpg(pid, signum)
    except ProcessLookupError:
        pass


def reply(conn, message):
    try:
        conn.sendall(json.dumps(message).encode("utf-8") + b"\n")
    except OSError:
        pass  # the caller went away; its child is killed when its connection is read


def finish():
    for pid in pids.values():
        kill_group(pid, signal.SIGKILL)
    sys.exit(0)


pids = {}  # connection -> the pid of the child it asked for
ends = {}  # pidfd of a child -> its connection
watched = set()  # connections read for signals to pass on, until their caller goes away
holders = set()  # connections of the other suite processes that use this server, until they end
closing = False  # the suite process that started this server is done: it ends with the holders
while True:
    inputs = [listener, *([] if closing else [sys.stdin]), *watched, *ends, *holders]
    for ready in select.select(inputs, [], [])[0]:
        if ready is listener:
            conn, _ = listener.accept()
            try:
                request, fds = receive(conn)
            except (EOFError, OSError, ValueError):
                conn.close()
                continue
            if request.get("hold"):
                holders.add(conn)
                reply(conn, {"pid": os.getpid()})
                continue
            inherited = [listener.fileno(), *(c.fileno() for c in pids), *ends, conn.fileno()]
            inherited += [holder.fileno() for holder in holders]
            pid = os.fork()
            if pid == 0:
                run_child(request, fds, inherited)
            try:
                os.setpgid(pid, pid)
            except OSError:
                pass  # the child did it first
            for fd in fds:
                os.close(fd)
            pids[conn] = pid
            ends[os.pidfd_open(pid)] = conn
            watched.add(conn)
            reply(conn, {"pid": pid})
        elif ready is sys.stdin:
            if not os.read(sys.stdin.fileno(), 1 << 16):  # its suite process is done
                closing = True
                if not holders:
                    finish()
        elif ready in holders:
            try:
                ended = not ready.recv(1 << 16)
            except OSError:
                ended = True
            if ended:
                holders.discard(ready)
                ready.close()
                if closing and not holders:
                    finish()
        elif isinstance(ready, int):  # a child has ended
            conn = ends.pop(ready)
            os.close(ready)
            _, status = os.waitpid(pids.pop(conn), 0)
            watched.discard(conn)
            reply(conn, {"returncode": os.waitstatus_to_exitcode(status)})
            conn.close()
        elif ready in watched:
            try:
                message = ready.recv(1 << 16)
            except OSError:
                message = b""
            if not message:  # the caller went away: so does what it started
                kill_group(pids[ready], signal.SIGKILL)
                watched.discard(ready)
            for line in message.splitlines():
                kill_group(pids[ready], json.loads(line)["signal"])
"""


class PreloadedPython:
    """One server for the commands whose interpreter start-up settings are those of `env`,
    listening at `socket_path(directory, env)`; started by `start` or at the first `run`.
    `preload`: Python code the server runs after its imports, before it forks any command (what
    every command of those settings would compute first, and that no later command changes).

    Processes that share `directory` (the suite's workers) share its servers: the first to need
    one starts it (and is its parent, which reaps it: its CPU counts in the suite's), the others
    hold it (a connection it keeps open for them) until they `release` it. A started server ends
    once its starter has `close`d it and no holder is left; `close` waits for that."""

    def __init__(
        self, python: str, env: Dict[str, str], directory: Path, preload: str = ""
    ) -> None:
        self.python = python
        self.env = env
        self.preload = preload
        self.startup_settings = startup_settings(env)
        self.socket = socket_path(directory, env)
        self.bin = Path(python).parent
        self.server: Optional[subprocess.Popen] = None
        self.holding: Optional[socket.socket] = None
        self.held_pid: Optional[int] = None

    def handles(self, args: List, env: Dict[str, str]) -> bool:
        """A fairseq program, `python -m fairseq_struct...` or one of the project's benchmark
        scripts, of this interpreter, with the server's interpreter settings."""
        if startup_settings(env) != self.startup_settings:
            return False
        program = Path(str(args[0]))
        if program.parent == self.bin and program.name in FAIRSEQ_PROGRAMS:
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

    def start(self) -> None:
        if self.holding is not None or (self.server is not None and self.server.poll() is None):
            return
        with open(f"{self.socket}.lock", "w") as lock:  # one start, whoever comes first
            fcntl.flock(lock, fcntl.LOCK_EX)
            if self.socket.exists():
                try:
                    self.holding = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                    self.holding.connect(str(self.socket))
                    self.holding.sendall(b'{"hold": true}\n')
                    return
                except OSError:  # its starter has ended: started again here
                    self.holding.close()
                    self.holding = None
            binding = binding_path(self.socket)
            for stale in (self.socket, binding):
                stale.unlink(missing_ok=True)
            self.server = subprocess.Popen(
                [self.python, "-c", _SERVER, str(self.socket), str(binding), self.preload],
                stdin=subprocess.PIPE,
                env=self.env,
            )
            deadline = time.monotonic() + 60
            while not self.socket.exists():  # listening before the server's imports
                if self.server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the preloaded Python server did not start ({self.socket})")
                time.sleep(0.01)

    def run(
        self, args: List, cwd: Path, env: Dict[str, str], timeout: float
    ) -> subprocess.CompletedProcess:
        """`args` in a forked child: what `subprocess.run(args, cwd=cwd, env=env,
        capture_output=True, text=True, timeout=timeout)` gives."""
        self.start()
        args = [str(arg) for arg in args]
        argv = args[1:] if args[0] == self.python else args
        name = Path(args[0]).name
        with tempfile.TemporaryDirectory(prefix="preloaded-") as scratch:
            out, err = Path(scratch, "stdout"), Path(scratch, "stderr")
            streams = [open(os.devnull, "rb"), open(out, "wb"), open(err, "wb")]
            try:
                connection = send_request(self.socket, argv, cwd, env, name, streams)
            finally:
                for stream in streams:
                    stream.close()
            with connection:
                try:
                    returncode = wait_for_exit(connection, timeout)
                except subprocess.TimeoutExpired:
                    raise subprocess.TimeoutExpired(args, timeout)  # closing kills the child
            stdout = out.read_text(encoding="utf-8", errors="replace")
            stderr = err.read_text(encoding="utf-8", errors="replace")
        return subprocess.CompletedProcess(args, returncode, stdout, stderr)

    @property
    def pid(self) -> int:
        """The server's process id, whichever process started it."""
        self.start()
        if self.holding is None:
            return self.server.pid
        if self.held_pid is None:  # the server's answer to the hold, once it has imported
            self.held_pid = next(replies(self.holding))["pid"]
        return self.held_pid

    def release(self) -> None:
        """This process no longer needs the server that another one started."""
        if self.holding is not None:
            self.holding.close()
            self.holding, self.held_pid = None, None

    def close(self) -> None:
        """`release`, and the server this process started ends once no other process holds it:
        waited for (whatever it waits for is another suite process's last tests)."""
        self.release()
        if self.server is not None:
            if self.server.poll() is None:
                self.server.stdin.close()
                self.server.wait()
            self.socket.unlink(missing_ok=True)


def send_request(
    path: Path, argv: List[str], cwd, env: Dict[str, str], program: str, streams: List
) -> socket.socket:
    """Asks the server at `path` to run `python ARGV` (or the script ARGV[0]) in `cwd` with
    `env`, on the three standard `streams` (file objects or descriptors); the connection then
    carries the child's exit status, and closing it kills the child."""
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connection.connect(str(path))
    request = {"argv": argv, "cwd": str(cwd), "env": dict(env)}
    request["logging_before_fairseq"] = program in LOGGING_BEFORE_FAIRSEQ
    fds = [stream if isinstance(stream, int) else stream.fileno() for stream in streams]
    socket.send_fds(connection, [json.dumps(request).encode("utf-8") + b"\n"], fds)
    return connection


def replies(connection: socket.socket, timeout: Optional[float] = None) -> Iterator[Dict]:
    """The server's replies on `connection`, one JSON line each (a command's: its pid, then its
    status; a hold's: the server's pid); TimeoutExpired when none comes within `timeout` s."""
    deadline = None if timeout is None else time.monotonic() + timeout
    pending = b""
    while True:
        while b"\n" not in pending:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not select.select([connection], [], [], left)[0]:
                raise subprocess.TimeoutExpired("preloaded python", timeout)
            chunk = connection.recv(1 << 16)
            if not chunk:
                raise RuntimeError("the preloaded Python server ended")
            pending += chunk
        line, pending = pending.split(b"\n", 1)
        yield json.loads(line)


def wait_for_exit(connection: socket.socket, timeout: Optional[float] = None) -> int:
    """The child's exit status (negative: the signal that ended it), from the server's replies
    (its pid, then its status); TimeoutExpired when it has not ended after `timeout` s."""
    for reply in replies(connection, timeout):
        if "returncode" in reply:
            return reply["returncode"]


def startup_settings(env: Dict[str, str]) -> Dict[str, str]:
    """The variables of `env` that a forked child cannot take from its request."""
    return {
        key: value
        for key, value in env.items()
        if key.startswith(_STARTUP_VARIABLES) and key not in _CHILD_SETS_ITSELF
    }


def socket_path(directory: Path, env: Dict[str, str]) -> Path:
    """Where the server for the start-up settings of `env` listens, in `directory`."""
    settings = json.dumps(sorted(startup_settings(env).items())).encode("utf-8")
    return Path(directory) / f"{hashlib.sha1(settings).hexdigest()[:16]}.sock"


def binding_path(socket: Path) -> Path:
    """Where the server binds its socket before it listens and renames it to `socket`."""
    return socket.with_name(socket.name + ".binding")
