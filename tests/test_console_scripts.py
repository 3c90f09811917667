"""Every command line of the package is a console script (setup.py), and the installed script
runs the same `main` as `python -m` (the ecosystem's conventions)."""

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


def test_every_command_line_module_has_a_console_script():
    assert set(commands.COMMANDS.values()) == modules_with_a_main_block()


def test_setup_installs_exactly_the_commands_and_each_resolves(monkeypatch):
    scripts = setup_console_scripts(monkeypatch)
    assert [line.split(" = ")[0] for line in scripts] == list(commands.COMMANDS)
    assert {line.split(" = ")[1] for line in scripts} == {"fairseq_struct.commands:run"}


def test_a_script_called_by_another_name_says_which_names_there_are(monkeypatch):
    monkeypatch.setattr(sys, "argv", ["/usr/bin/fairseq-struct-nothing"])
    with pytest.raises(SystemExit, match="fairseq-struct-nothing: not a fairseq-struct command"):
        commands.run()


def test_the_installed_script_gives_what_python_m_gives(tmp_path):
    script = BIN / "fairseq-struct-score"
    assert script.is_file(), f"{script} is missing: reinstall the package (make venv)"
    hyp, ref = tmp_path / "hyp.txt", tmp_path / "ref.txt"
    hyp.write_text("Dün akşam o kitabı okudum.\nBiz dün akşam eve gittik.\n", encoding="utf-8")
    ref.write_text("Dün akşam o kitabı okudum.\nBen dün akşam eve gittim.\n", encoding="utf-8")
    arguments = ["--hyp", str(hyp), "--ref", str(ref), "--json"]
    installed = subprocess.run(
        [str(script), *arguments, str(tmp_path / "a.json")], capture_output=True, text=True
    )
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


def test_an_installed_script_names_itself_in_its_usage():
    result = subprocess.run(
        [str(BIN / "fairseq-struct-prepare"), "--help"], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.startswith("usage: fairseq-struct-prepare ")


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
