"""What the grids' command lines share: run the steps, then write the report; a grid error is
one line on standard error and exit status 1."""

import argparse
import shlex
import sys
from pathlib import Path
from typing import Any, Callable, List, Optional, Sequence

from fairseq_struct.grid.steps import GridError, Step, run_steps


def run_grid(
    module: str,
    argv: Optional[Sequence[str]],
    args: argparse.Namespace,
    make_grid: Callable[[argparse.Namespace], Any],
    steps_of: Callable[[Any], List[Step]],
    write_report: Callable[..., Path],
) -> int:
    """The steps of `make_grid(args)` unless --report-only, then its report; the exit status."""
    try:
        grid = make_grid(args)
        if not args.report_only:
            run_steps(steps_of(grid), launcher=shlex.split(args.launcher))
        command = ["python", "-m", module, *(sys.argv[1:] if argv is None else argv)]
        report = write_report(grid, command_line=[shlex.quote(part) for part in command])
    except GridError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(f"report: {report}")
    return 0
