"""Every shell script answers --help with its usage and nothing else, and a missing option value
or an unknown argument is an error message with exit status 2 (as argparse does), never bash's
"unbound variable" and never a run."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO_ROOT, script_environment

SCRIPTS = sorted(path.name for path in (REPO_ROOT / "scripts").glob("*.sh"))
# Source lines that a usage printed from the script's own text would let through.
SOURCE_MARKS = ("set -euo", "usage()", "while [[", 'case "$1"', "REPO=", "#!/")


def _run(script: str, *arguments: str, cwd: Path, env: dict = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", str(REPO_ROOT / "scripts" / script), *arguments],
        cwd=cwd, capture_output=True, text=True, timeout=60, env=env or script_environment(),
    )  # fmt: skip


def test_every_script_is_covered():
    assert len(SCRIPTS) == 12, SCRIPTS  # a new script gets a row in the tests below


@pytest.mark.parametrize("script", SCRIPTS)
def test_help_prints_the_usage_only_and_runs_nothing(tmp_path, script):
    before = set((REPO_ROOT).iterdir())
    result = _run(script, "--help", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    # a usage text of its own, or the comment block that opens the script
    opening_comment = (REPO_ROOT / "scripts" / script).read_text().splitlines()[1][2:]
    assert lines[0].lower().startswith("usage") or lines[0] == opening_comment, lines[:2]
    assert len(lines) >= 3
    assert not [line for line in lines if line.lstrip().startswith(SOURCE_MARKS)], lines
    assert not list(tmp_path.iterdir())  # nothing written where it was called
    assert set(REPO_ROOT.iterdir()) == before  # nor in the checkout (the demos' work dirs)


@pytest.mark.parametrize(
    "script, option",
    [
        ("train-en-tr.sh", "--data"),
        ("train-en-tr.sh", "--precision"),
        ("train-en-tr.sh", "--tgt-lang"),
        ("recipe-transfer-en-tr.sh", "--size"),
        ("prepare-parallel.sh", "--chunk-lines"),
        ("prepare-mlm.sh", "--workers"),
        ("finetune.sh", "--data"),
        ("evaluate.sh", "--beam"),
    ],
)
def test_a_missing_value_is_named(tmp_path, script, option):
    arguments = ["a", "b", "c", "d", option] if script == "evaluate.sh" else [option]
    result = _run(script, *arguments, cwd=tmp_path)
    assert result.returncode == 2, (result.stdout, result.stderr)
    # finetune.sh runs `fairseq-struct finetune`, whose argparse says it its own way.
    expected = (
        f"argument {option}: expected one argument"
        if script == "finetune.sh"
        else (f"{option} needs a value")
    )
    assert expected in result.stderr
    assert "unbound variable" not in result.stderr


@pytest.mark.parametrize("script", ["demo.sh", "demo-mlm.sh", "demo-finetune.sh"])
def test_the_demos_refuse_arguments_instead_of_running(tmp_path, script):
    result = _run(script, "--max-update", cwd=tmp_path)
    assert result.returncode == 2
    assert "unknown argument '--max-update'" in result.stderr


def _data_dir(tmp_path: Path, languages, report_target=None) -> Path:
    data = tmp_path / "data-bin"
    data.mkdir()
    for language in languages:
        (data / f"dict.{language}.txt").write_text("a 1\n", encoding="utf-8")
    if report_target is not None:
        report = {"source_lang": "en", "target_lang": report_target}
        (data / "prepare_report.json").write_text(json.dumps(report), encoding="utf-8")
    return data


def test_train_takes_the_target_language_from_the_report(tmp_path):
    # `ls dict.*` would have picked iu, the first dictionary after en; the report says tr.
    data = _data_dir(tmp_path, ["en", "iu", "tr"], report_target="tr")
    result = _run("train-en-tr.sh", "--data", str(data), "--save-dir", "ck", "--cpu", cwd=tmp_path)
    # The traced fairseq-train command (set -x) names the language; the run itself then stops
    # on the missing binarized data.
    command = [line for line in result.stderr.splitlines() if "fairseq-train" in line][0]
    assert "--target-lang tr " in command
    assert "--tensorboard-logdir ck/tensorboard" in command
    assert result.returncode != 0


def test_train_without_a_report_asks_for_the_target_language(tmp_path):
    data = _data_dir(tmp_path, ["en", "tr"])
    result = _run("train-en-tr.sh", "--data", str(data), "--save-dir", "ck", cwd=tmp_path)
    assert result.returncode == 2
    assert f"{data}/prepare_report.json is missing; pass --tgt-lang" in result.stderr
    assert not (tmp_path / "ck").exists()


def test_train_names_a_python_without_the_package(tmp_path):
    """A python without fairseq_struct is named in the error, not a silent exit status 1."""
    tools = tmp_path / "tools"
    tools.mkdir()
    # Isolated and without site-packages: a python that cannot find the package.
    (tools / "python").write_text(f'#!/bin/bash\nexec "{sys.executable}" -I -S "$@"\n')
    (tools / "python").chmod(0o755)
    env = dict(script_environment(), FAIRSEQ_STRUCT_TOOLS=str(tools))
    data = _data_dir(tmp_path, ["en", "tr"], report_target="tr")
    result = _run("train-en-tr.sh", "--data", str(data), "--save-dir", "ck", cwd=tmp_path, env=env)
    assert result.returncode == 1
    assert f"train-en-tr.sh: {tools}/python has no fairseq_struct package: run 'make venv'" in (
        result.stderr
    )
    assert not (tmp_path / "ck").exists()


def test_train_refuses_a_target_language_without_a_dictionary(tmp_path):
    data = _data_dir(tmp_path, ["en", "tr"], report_target="iu")
    result = _run("train-en-tr.sh", "--data", str(data), "--save-dir", "ck", cwd=tmp_path)
    assert result.returncode == 2
    assert f"{data} has no dict.iu.txt for target language 'iu'" in result.stderr


def test_the_tools_are_those_of_fairseq_struct_tools_then_the_checkouts_then_path(tmp_path):
    """scripts/lib/tools.sh: the directory FAIRSEQ_STRUCT_TOOLS names, else .venv/bin of the
    checkout when it exists, else PATH; the scripts run python and fairseq's programs from it."""
    tools = tmp_path / "tools"
    tools.mkdir()
    log = tmp_path / "calls.log"
    for name in ("python", "python3", "fairseq-train", "fairseq-generate"):
        real = Path(sys.executable).parent / name
        then = f'exec "{real}" "$@"' if name.startswith("python") else "exit 3"
        (tools / name).write_text(f'#!/bin/bash\necho "{name} $1" >> "{log}"\n{then}\n')
        (tools / name).chmod(0o755)
    env = dict(os.environ, FAIRSEQ_STRUCT_TOOLS=str(tools))
    source = ["bash", "-c", f'source "{REPO_ROOT}/scripts/lib/tools.sh"; echo "$TOOLS"']
    chosen = subprocess.run(source, env=env, capture_output=True, text=True).stdout
    assert chosen == f"{tools}/\n"
    env.pop("FAIRSEQ_STRUCT_TOOLS")
    chosen = subprocess.run(source, env=env, capture_output=True, text=True).stdout
    venv = REPO_ROOT / ".venv" / "bin"
    assert chosen == (f"{venv}/\n" if (venv / "python").exists() else "\n")

    env["FAIRSEQ_STRUCT_TOOLS"] = str(tools)
    data = _data_dir(tmp_path, ["en", "tr"], report_target="tr")
    training = ["train-en-tr.sh", "--data", str(data), "--save-dir", "ck", "--cpu"]
    trained = _run(*training, cwd=tmp_path, env=env)
    assert trained.returncode == 3, trained.stderr
    (data / "test.raw.tr").write_text("a\n", encoding="utf-8")
    evaluation = ["evaluate.sh", str(data), str(data / "test.raw.tr"), str(data / "test.raw.tr")]
    evaluated = _run(*evaluation, str(tmp_path / "eval"), cwd=tmp_path, env=env)
    assert evaluated.returncode == 3
    calls = log.read_text().splitlines()
    # train-en-tr.sh: where the package is, the target language, the decoding length limit,
    # then training; evaluate.sh: where the package is, the length limit, then decoding piped
    # into its progress counter (both start at once).
    assert calls[:4] == ["python -c"] * 3 + [f"fairseq-train {data}"], calls
    assert calls[4:6] == ["python3 -c"] * 2, calls
    assert sorted(calls[6:]) == [f"fairseq-generate {data}", "python3 -m"], calls
