"""What the grids' command lines share: run the steps, then write the report; a grid error is
one line on standard error and exit status 1."""

import argparse
import shlex
import sys
from pathlib import Path
from typing import Any, Callable, List, Optional, Sequence, Tuple, TypeVar

from fairseq_struct.commands import COMMANDS, PROGRAM
from fairseq_struct.grid.steps import GridError, Step, run_steps

Value = TypeVar("Value")


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
        if args.report_only:
            # The report describes the runs of this command line: a step finished with another
            # (an evaluation under another --checkpoint-rule, training with another budget)
            # stops it, naming the marker, rather than being reported under this one's labels.
            for step in steps_of(grid):
                step.finished()
        else:
            run_steps(steps_of(grid), launcher=shlex.split(args.launcher))
        name = next(name for name, target in COMMANDS.items() if target == module)
        command = [PROGRAM, name, *(sys.argv[1:] if argv is None else argv)]  # the front door
        report = write_report(grid, command_line=[shlex.quote(part) for part in command])
    except GridError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(f"report: {report}")
    return 0


def add_assignment_option(
    parser: argparse.ArgumentParser,
    flag: str,
    key: str,
    names: Sequence[str],
    value_name: str,
    parse: Callable[[str], Optional[Value]],
    requirement: str,
    help_text: str,
) -> None:
    """`flag KEY=VALUE ...` (e.g. --arch-lr tp_transformer=0.006): KEY one of `names`, VALUE
    what `parse` accepts (None refuses it, naming the expected form); a list of (KEY, VALUE)."""

    def parse_assignment(text: str) -> Tuple[str, Value]:
        name, _, raw = text.partition("=")
        value = parse(raw)
        if name not in names or value is None:
            raise argparse.ArgumentTypeError(
                f"{text!r} is not {key}={value_name} with {key} one of {', '.join(names)} "
                f"and {value_name} {requirement}"
            )
        return name, value

    parser.add_argument(
        flag,
        nargs="+",
        type=parse_assignment,
        default=[],
        metavar=f"{key}={value_name}",
        help=help_text,
    )


def positive_float(text: str) -> Optional[float]:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if value > 0 else None


def positive_int(text: str) -> Optional[int]:
    return int(text) if text.isdigit() and int(text) > 0 else None
