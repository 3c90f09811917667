"""A stand-in for `python` or one of fairseq's programs, for the project's scripts under test:
the command runs in a child of the preloaded server (preloaded_python.py) on this process's
standard streams, and this process ends as that child ends (its exit status, or the signal that
ended it). A signal sent to this process goes on to the child; killing this process kills the
child. What the server cannot run the same way (an interpreter option such as `python -u`, start-up
settings no server has) runs as the real program, which this process then becomes (exec).

`write_stand_ins` makes a directory of them for `FAIRSEQ_STRUCT_TOOLS` (scripts/lib/tools.sh):
one for each program of the environment, the others linked to the real ones. Each runs under
`python -SE` (no site packages, no PYTHON* variables), so it starts in ~20 ms.
"""

import json
import os
import signal
import sys
from pathlib import Path
from typing import List, Optional

from preloaded_python import FAIRSEQ_PROGRAMS, send_request, socket_path, wait_for_exit

# Where the servers listen (preloaded_python.socket_path), for the stand-ins.
SERVERS_VARIABLE = "FAIRSEQ_STRUCT_TEST_PRELOADED"
_PYTHONS = ("python", "python3")
_PASSED_ON = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1)


def python_arguments(program: str, args: List[str]) -> Optional[List[str]]:
    """What the interpreter is asked to run, as the server takes it (`-m MODULE ...`, `-c CODE
    ...`, `- ...`, `SCRIPT ...`), or None for anything else (interpreter options, no program)."""
    if Path(program).name not in _PYTHONS:
        return [program, *args]
    if not args:
        return None
    if args[0] in ("-m", "-c"):
        return args if len(args) > 1 else None
    if args[0] == "-" or not args[0].startswith("-"):
        return args
    return None


def main(program: str) -> None:
    args = sys.argv[1:]
    argv = python_arguments(program, args)
    servers = os.environ.get(SERVERS_VARIABLE)
    server = socket_path(Path(servers), dict(os.environ)) if servers else None
    connection = None
    if argv is not None and server is not None and server.exists():
        try:
            connection = send_request(
                server, argv, os.getcwd(), os.environ, Path(program).name, [0, 1, 2]
            )
        except OSError:
            connection = None
    if connection is None:
        os.execv(program, [program, *args])

    def pass_on(signum, _frame) -> None:
        connection.sendall(json.dumps({"signal": signum}).encode("utf-8") + b"\n")

    for signum in _PASSED_ON:
        signal.signal(signum, pass_on)
    returncode = wait_for_exit(connection)
    if returncode < 0:  # ended by a signal: so does this process
        if -returncode in _PASSED_ON:
            signal.signal(-returncode, signal.SIG_DFL)
        os.kill(os.getpid(), -returncode)
    sys.exit(returncode)


def write_stand_ins(directory: Path, python: str) -> Path:
    """`directory` with a stand-in for `python`, `python3` and fairseq's programs of the
    environment of `python`, and links to its other programs (torchrun, pip, ...)."""
    directory.mkdir(parents=True, exist_ok=True)
    bin_dir = Path(python).parent
    tests = Path(__file__).resolve().parent
    for real in sorted(bin_dir.iterdir()):
        stand_in = directory / real.name
        if stand_in.exists() or not os.access(real, os.X_OK) or real.is_dir():
            continue
        if real.name in _PYTHONS or real.name in FAIRSEQ_PROGRAMS:
            stand_in.write_text(
                f"#!{python} -SE\nimport sys\nsys.path.insert(0, {str(tests)!r})\n"
                f"import preloaded_tool\npreloaded_tool.main({str(real)!r})\n",
                encoding="utf-8",
            )
            stand_in.chmod(0o755)
        else:
            stand_in.symlink_to(real)
    return directory
