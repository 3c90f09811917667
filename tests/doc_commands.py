"""The commands of the README and the guides, read from their fenced shell blocks, and the
check of each against the parser of the program it calls (tests/test_docs_commands.py).

A block's lines are joined at trailing backslashes and split into simple commands at `&&`,
`||`, `;` and `|`; comments, leading `VAR=value` assignments and the `torchrun`/`srun` launchers
are set aside. `$NAME` takes the value the block assigned to NAME (`$USER_DIR` is the
package's directory), any other variable or `$(...)` stands for one argument, and `...` for
arguments left out (a command with `...` may then lack a required one). Checked:

- the project's front door (`fairseq-struct COMMAND`) and `python -m fairseq_struct...`: the
  command's module's own `main(argv)`, stopped as soon as argparse has parsed the arguments;
- fairseq's programs with `--user-dir`: fairseq's parser of that program with the plugin's
  models, tasks and their options (`options.parse_args_and_arch`);
- `scripts/*.sh`: the file exists, and the script parses its options and stops there
  (`--check-options`, which every script takes first).
"""

import argparse
import contextlib
import importlib
import io
import os
import re
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, Iterator, List, Optional

from conftest import REPO_ROOT

from fairseq_struct.commands import COMMANDS, PROGRAM

FAIRSEQ_PARSERS = {
    "fairseq-train": "get_training_parser",
    "fairseq-generate": "get_generation_parser",
    "fairseq-interactive": "get_interactive_generation_parser",
    "fairseq-validate": "get_validation_parser",
    "fairseq-preprocess": "get_preprocessing_parser",
}
SHELLS = ("bash", "sh", "shell")
LAUNCHERS = ("torchrun", "srun")
PYTHONS = re.compile(r"(.*/)?python(3(\.\d+)?)?$")
OPERATORS = {"&&", "||", ";", "|", "&"}
ELIDED = "..."


@dataclass
class Command:
    document: Path
    line: int
    words: List[str]
    elided: bool

    def where(self) -> str:
        document = self.document
        if document.is_relative_to(REPO_ROOT):
            document = document.relative_to(REPO_ROOT)
        return f"{document}:{self.line}: {' '.join(self.words)}"


def shell_blocks(document: Path) -> Iterator[List[tuple]]:
    """(line number, text) of each fenced bash/sh/shell block, continuation lines joined."""
    lines = document.read_text(encoding="utf-8").splitlines()
    index = 0
    while index < len(lines):
        opening = re.match(r"\s*```(\w*)\s*$", lines[index])
        index += 1
        if not opening:
            continue
        block, joined, start = [], "", None
        while index < len(lines) and not lines[index].strip().startswith("```"):
            text = lines[index]
            start = start or index + 1
            if text.rstrip().endswith("\\"):
                joined += text.rstrip()[:-1] + " "
            else:
                block.append((start, joined + text))
                joined, start = "", None
            index += 1
        index += 1
        if opening.group(1) in SHELLS:
            yield block


def _substituted(text: str, variables: Dict[str, str]) -> str:
    text = re.sub(r"\$\(\s*which\s+([\w.-]+)\s*\)", r"\1", text)  # $(which fairseq-train)
    text = re.sub(r"\$\([^()]*\)", "SUBSTITUTION", text)

    def value(match: re.Match) -> str:
        name = match.group(1) or match.group(2)
        return variables.get(name, name)

    return re.sub(r"\$\{(\w+)[^}]*\}|\$(\w+)", value, text)


def commands(document: Path) -> Iterator[Command]:
    for block in shell_blocks(document):
        variables = {"USER_DIR": str(REPO_ROOT / "fairseq_struct")}
        for line, text in block:
            lexer = shlex.shlex(_substituted(text, variables), posix=True, punctuation_chars=";&|")
            lexer.whitespace_split = True
            lexer.commenters = "#"
            try:
                words = list(lexer)
            except ValueError:  # an unclosed quote: prose, not a command
                continue
            simple: List[str] = []
            for word in words + [";"]:
                if word not in OPERATORS:
                    simple.append(word)
                    continue
                # NAME=value alone assigns; before a command it only sets its environment.
                while simple and re.match(r"^\w+=", simple[0]):
                    name, _, assigned = simple.pop(0).partition("=")
                    if not simple:
                        variables[name] = assigned
                if simple and simple[0] in ("do", "then", "else", "time", "exec"):
                    simple.pop(0)
                if simple:
                    yield Command(
                        document, line, [w for w in simple if w != ELIDED], ELIDED in simple
                    )
                simple = []


def program(words: List[str]) -> List[str]:
    """The words of the program a launcher starts (torchrun/srun options set aside)."""
    if words and os.path.basename(words[0]) in LAUNCHERS:
        rest = words[1:]
        while rest and rest[0].startswith("-"):
            option = rest.pop(0)
            if "=" not in option and rest and not rest[0].startswith("-") and option in (
                "--nproc_per_node", "--nnodes", "--node_rank", "--master_addr",
                "--master_port", "--rdzv_backend", "--rdzv_endpoint", "--ntasks",
                "--gres", "--time", "-n", "-N",
            ):  # fmt: skip
                rest.pop(0)
        return rest
    return words


class _Parsed(Exception):
    """Raised once argparse has parsed a program's arguments: nothing runs after it."""


@contextlib.contextmanager
def _stop_after_parsing() -> Iterator[None]:
    parse_args = argparse.ArgumentParser.parse_args

    def parse_and_stop(self, args=None, namespace=None):
        parse_args(self, args, namespace)
        raise _Parsed

    argparse.ArgumentParser.parse_args = parse_and_stop
    try:
        yield
    finally:
        argparse.ArgumentParser.parse_args = parse_args


def _argparse_error(run, elided: bool) -> Optional[str]:
    """The error argparse reports for run(), or None; with elided arguments, a missing
    required one is not an error."""
    stderr = io.StringIO()
    try:
        with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
            run()
    except _Parsed:
        return None
    except SystemExit as exit:
        message = stderr.getvalue().strip().splitlines()
        error = message[-1] if message else f"exit {exit.code}"
        if exit.code == 0 or (elided and "are required" in error):
            return None
        return error
    return "the program ran without parsing its arguments"


def check_module(module: str, argv: List[str], elided: bool) -> Optional[str]:
    main = importlib.import_module(module).main
    with _stop_after_parsing():
        return _argparse_error(lambda: main(argv), elided)


def check_fairseq(name: str, argv: List[str], elided: bool) -> Optional[str]:
    from fairseq import options
    from fairseq.models import ARCH_MODEL_REGISTRY, MODEL_REGISTRY

    import fairseq_struct

    fairseq_struct.register()  # what --user-dir does in fairseq's own programs

    parser = getattr(options, FAIRSEQ_PARSERS[name])()
    known, _ = parser.parse_known_args(argv)
    arch = getattr(known, "arch", "")
    if arch is None:  # fairseq-train without --arch: fairseq stops with a bare RuntimeError
        return None if elided else "--arch is required"
    if arch and arch not in ARCH_MODEL_REGISTRY and arch not in MODEL_REGISTRY:
        return f"--arch {arch}: no such architecture (fairseq stops with a bare RuntimeError)"
    if name == "fairseq-preprocess":
        return _argparse_error(lambda: parser.parse_args(argv), elided)
    with _stop_after_parsing():
        return _argparse_error(lambda: options.parse_args_and_arch(parser, argv), elided)


def check_script(script: Path, argv: List[str], elided: bool) -> Optional[str]:
    if not script.is_file():
        return f"{script.relative_to(REPO_ROOT)} does not exist"
    result = subprocess.run(
        ["bash", str(script), "--check-options", *argv],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    if result.returncode == 0:
        return None
    lines = result.stderr.strip().splitlines()
    error = lines[0] if lines else f"exit {result.returncode}"
    return None if elided and "required" in error else error


UNCHECKED = "unchecked"


def checker(command: Command) -> Optional[Callable[[], Optional[str]]]:
    """The check of the program the command calls, or None for a program this module does not
    know (make, pip, ...)."""
    words = program(command.words)
    if not words:
        return None
    name, argv, elided = words[0], words[1:], command.elided
    if name in ("bash", "sh") and argv and argv[0].endswith(".sh"):
        name, argv = argv[0], argv[1:]
    if name.endswith(".sh") and "scripts/" in name:
        script = REPO_ROOT / name[name.index("scripts/") :]
        return lambda: check_script(script, argv, elided)
    if name == PROGRAM and argv:
        if argv[0] not in COMMANDS:
            return lambda: f"{PROGRAM}: {argv[0]!r} is not a command"
        return lambda: check_module(COMMANDS[argv[0]], argv[1:], elided)
    if PYTHONS.match(name) and argv[:1] == ["-m"] and argv[1:2]:
        if argv[1].startswith("fairseq_struct"):
            return lambda: check_module(argv[1], argv[2:], elided)
    if os.path.basename(name) in FAIRSEQ_PARSERS and "--user-dir" in argv:
        return lambda: check_fairseq(os.path.basename(name), argv, elided)
    return None


def check(command: Command) -> Optional[str]:
    """What is wrong with the command for the program it calls, None if nothing is, or
    UNCHECKED for a program this module does not know."""
    run = checker(command)
    return UNCHECKED if run is None else run()
