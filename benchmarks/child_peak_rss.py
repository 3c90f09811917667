"""The peak RSS of a command, measured by a small process of its own.

Linux carries a parent's peak RSS into its child across fork (or vfork) and exec: `wait4` on a
child of a benchmark that holds torch, transformers or a model reports at least the
benchmark's own peak, however little the child used (a `python -c pass` started by a 600 MiB
process reports 613 MiB). So the command runs under `python -S -c WRAPPER FILE COMMAND...`, a
process of about 10 MiB, which writes to FILE the largest RSS of any one process it reaped (its
children, forked from its own small image), in KiB, as getrusage reports it.
"""

import sys
from pathlib import Path
from typing import List, Sequence

WRAPPER = """
import resource, subprocess, sys
status = subprocess.call(sys.argv[2:])
with open(sys.argv[1], "w") as out:
    out.write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))
sys.exit(status if status >= 0 else 128 - status)
"""


def wrapped(command: Sequence[str], peak_file: Path, python: str = sys.executable) -> List[str]:
    """`command` run under the wrapper, which writes its peak RSS to `peak_file`."""
    return [python, "-S", "-c", WRAPPER, str(peak_file), *command]


def peak_kib(peak_file: Path) -> int:
    """What the wrapper wrote: the command's peak RSS in KiB (Linux's ru_maxrss unit)."""
    return int(peak_file.read_text(encoding="utf-8"))
