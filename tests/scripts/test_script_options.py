"""Every shell script answers --help with its usage and nothing else, and a missing option value
or an unknown argument is an error message with exit status 2 (issue 14), never bash's
"unbound variable" and never a run: the demos used to start on `--help`."""

import json
import subprocess
from pathlib import Path

import pytest
from conftest import REPO_ROOT

SCRIPTS = sorted(path.name for path in (REPO_ROOT / "scripts").glob("*.sh"))
# Source lines that a usage printed from the script's own text would let through.
SOURCE_MARKS = ("set -euo", "usage()", "while [[", 'case "$1"', "REPO=", "#!/")


def _run(script: str, *arguments: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", str(REPO_ROOT / "scripts" / script), *arguments],
        cwd=cwd, capture_output=True, text=True, timeout=60,
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
    assert f"{option} needs a value" in result.stderr
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


def test_train_refuses_a_target_language_without_a_dictionary(tmp_path):
    data = _data_dir(tmp_path, ["en", "tr"], report_target="iu")
    result = _run("train-en-tr.sh", "--data", str(data), "--save-dir", "ck", cwd=tmp_path)
    assert result.returncode == 2
    assert f"{data} has no dict.iu.txt for target language 'iu'" in result.stderr
