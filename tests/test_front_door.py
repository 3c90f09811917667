"""One front door: `fairseq-struct COMMAND` (setup.py's one console script) runs every command
line of the package, the same `main` as `python -m`, and `--help` lists them by group."""

import argparse
import json
import re
import runpy
import subprocess
import sys
from pathlib import Path

import pytest
import setuptools
from conftest import REPO_ROOT

from fairseq_struct import commands

BIN = Path(sys.executable).parent


def modules_with_a_main_block() -> set:
    found = set()
    for path in (REPO_ROOT / "fairseq_struct").rglob("*.py"):
        if path.name == "__main__.py":  # a package run as `python -m PACKAGE`
            found.add(".".join(path.parent.relative_to(REPO_ROOT).parts))
        elif re.search(r'^if __name__ == "__main__":', path.read_text(encoding="utf-8"), re.M):
            relative = path.relative_to(REPO_ROOT).with_suffix("")
            found.add(".".join(relative.parts))
    return found


def setup_console_scripts(monkeypatch) -> list:
    captured = {}
    monkeypatch.setattr(setuptools, "setup", lambda **options: captured.update(options))
    monkeypatch.chdir(REPO_ROOT)
    runpy.run_path(str(REPO_ROOT / "setup.py"))
    return captured["entry_points"]["console_scripts"]


def front_door(*arguments: str) -> subprocess.CompletedProcess:
    script = BIN / commands.PROGRAM
    assert script.is_file(), f"{script} is missing: reinstall the package (make venv)"
    return subprocess.run([str(script), *arguments], capture_output=True, text=True)


def test_every_command_line_module_is_a_command_of_the_front_door():
    assert set(commands.COMMANDS.values()) == modules_with_a_main_block() - {"fairseq_struct"}
    names = [name for rows in commands.GROUPS.values() for name, _, _ in rows]
    assert len(names) == len(set(names)) == len(commands.COMMANDS)


def test_setup_installs_the_front_door_alone(monkeypatch):
    assert setup_console_scripts(monkeypatch) == ["fairseq-struct = fairseq_struct.commands:main"]


def test_help_lists_every_command_by_group_one_line_each():
    result = front_door("--help")
    assert result.returncode == 0, result.stderr[-2000:]
    lines = result.stdout.splitlines()
    assert lines[0].startswith("usage: fairseq-struct COMMAND")
    for group, rows in commands.GROUPS.items():
        at = lines.index(f"{group}:")
        for offset, (name, _, summary) in enumerate(rows, start=1):
            assert lines[at + offset].split() == [name, *summary.split()]
    assert front_door().returncode == 2  # no command: the list, and a usage error


def test_an_unknown_command_is_named_with_the_list_of_commands():
    result = front_door("scor", "--hyp", "h")
    assert result.returncode == 2
    assert result.stderr.startswith("fairseq-struct: 'scor' is not a command")
    assert "  score " in result.stderr


def test_the_front_door_gives_what_python_m_gives(tmp_path):
    hyp, ref = tmp_path / "hyp.txt", tmp_path / "ref.txt"
    hyp.write_text("Dün akşam o kitabı okudum.\nBiz dün akşam eve gittik.\n", encoding="utf-8")
    ref.write_text("Dün akşam o kitabı okudum.\nBen dün akşam eve gittim.\n", encoding="utf-8")
    arguments = ["--hyp", str(hyp), "--ref", str(ref), "--json"]
    installed = front_door("score", *arguments, str(tmp_path / "a.json"))
    module = subprocess.run(
        [sys.executable, "-m", "fairseq_struct.eval.score", *arguments, str(tmp_path / "b.json")],
        capture_output=True,
        text=True,
    )
    assert installed.returncode == 0, installed.stderr[-2000:]
    assert module.returncode == 0, module.stderr[-2000:]
    assert installed.stdout == module.stdout
    first = json.loads((tmp_path / "a.json").read_text())
    assert first == json.loads((tmp_path / "b.json").read_text())
    assert 0 < first["scores"]["BLEU"]["score"] < 100


@pytest.mark.parametrize("command", sorted(commands.COMMANDS))
def test_a_command_names_itself_in_its_usage(command):
    result = front_door(command, "--help")
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.startswith(f"usage: fairseq-struct {command} ")


def test_fairseq_programs_are_found_as_the_shell_scripts_find_them(tmp_path, monkeypatch):
    """scripts/lib/tools.sh's order: FAIRSEQ_STRUCT_TOOLS, then beside the interpreter, then
    PATH; the grid's pretraining and the benchmarks must start the fine-tunings' fairseq-train."""
    monkeypatch.delenv("FAIRSEQ_STRUCT_TOOLS", raising=False)
    assert commands.environment_tool("fairseq-train") == str(BIN / "fairseq-train")
    (tmp_path / "fairseq-train").write_text("#!/bin/sh\n", encoding="utf-8")
    monkeypatch.setenv("FAIRSEQ_STRUCT_TOOLS", str(tmp_path))
    assert commands.environment_tool("fairseq-train") == str(tmp_path / "fairseq-train")
    # a directory without the program: the next place in the order
    assert commands.environment_tool("fairseq-generate") == str(BIN / "fairseq-generate")
    assert commands.environment_tool("no-such-program-here") == "no-such-program-here"


def test_a_grid_report_records_its_command_line_by_the_front_door(tmp_path, capsys):
    from fairseq_struct.grid.command_line import run_grid

    recorded = {}

    def write_report(grid, command_line):
        recorded["command_line"] = command_line
        return tmp_path / "report.md"

    arguments = ["--tgt-lang", "tr", "--out", "grids/a b", "--report-only"]
    namespace = argparse.Namespace(report_only=True)
    status = run_grid(
        "fairseq_struct.grid.translation", arguments, namespace, lambda args: None,
        lambda grid: [], write_report,
    )  # fmt: skip
    assert status == 0, capsys.readouterr().err
    assert recorded["command_line"] == [
        "fairseq-struct", "grid-translation", "--tgt-lang", "tr", "--out", "'grids/a b'",
        "--report-only",
    ]  # fmt: skip
