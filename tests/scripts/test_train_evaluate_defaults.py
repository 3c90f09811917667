"""What train-en-tr.sh and evaluate.sh give fairseq by default, read by stand-in fairseq-train
and fairseq-generate that record their arguments:
- the peak learning rate: the cpu profile's 0.003 and the paper profile's 0.001 for every
  architecture, --lr instead of either (the translation grid leaves the baseline's to the
  script and passes the TP-Transformer's: tests/grid/test_translation_grid_lr.py);
- the decoding length limit that the preparation fitted to the training pairs
  (prepare_report.json's decoding_length), for validation BLEU and the test set alike; 1.2 ×
  source + 10 for validation and fairseq-generate's own for the test set without it; a limit
  given after evaluate.sh's -- wins."""

import json
import subprocess
from pathlib import Path
from typing import List, Optional

import pytest
from conftest import REPO_ROOT, script_environment

FITTED = {"max_len_a": 2.3, "max_len_b": 10, "coverage": 0.999}


@pytest.fixture
def run_script(tmp_path):
    """Run a script of scripts/ on a data directory with the given prepare_report.json (None:
    none); the arguments the stand-in fairseq program received."""
    tools, data = tmp_path / "tools", tmp_path / "data-bin"
    tools.mkdir()
    data.mkdir()
    for language in ("en", "tr"):
        (data / f"dict.{language}.txt").write_text("a 1\n", encoding="utf-8")
    environment = script_environment()
    for python in ("python", "python3"):  # the suite's (stand-ins: no imports to wait for)
        suites = Path(environment["FAIRSEQ_STRUCT_TOOLS"]) / python
        (tools / python).write_text(f'#!/bin/bash\nexec "{suites}" "$@"\n')
        (tools / python).chmod(0o755)
    for program in ("fairseq-train", "fairseq-generate"):
        record = f'printf "%s\\n" "$@" > "{tmp_path / program}.args"'
        (tools / program).write_text(f"#!/bin/bash\n{record}\n")
        (tools / program).chmod(0o755)
    environment["FAIRSEQ_STRUCT_TOOLS"] = str(tools)

    def run(script: str, report: Optional[dict], *arguments: str) -> List[str]:
        if report is not None:
            (data / "prepare_report.json").write_text(json.dumps(report), encoding="utf-8")
        if script == "train-en-tr.sh":
            command = ["--data", str(data), "--save-dir", "ck", "--tgt-lang", "tr", "--cpu"]
            program = "fairseq-train"
        else:
            (tmp_path / "ck.pt").touch()
            (tmp_path / "ref.tr").write_text("a\n", encoding="utf-8")
            command = [str(data), "ck.pt", "ref.tr", "out"]
            program = "fairseq-generate"
        # evaluate.sh then fails on the stand-in's empty output: only its arguments matter.
        subprocess.run(["bash", str(REPO_ROOT / "scripts" / script), *command, *arguments],
                       env=environment, cwd=tmp_path, capture_output=True)  # fmt: skip
        return (tmp_path / f"{program}.args").read_text(encoding="utf-8").splitlines()

    return run


def option(arguments: List[str], name: str) -> Optional[str]:
    return arguments[arguments.index(name) + 1] if name in arguments else None


@pytest.mark.parametrize(
    "profile, options, expected",
    [
        ("cpu", (), "0.003"),  # tp_transformer_tiny, the profile's architecture
        ("cpu", ("--arch", "transformer_relpos_tiny"), "0.003"),
        ("cpu", ("--lr", "0.002"), "0.002"),
        ("paper", (), "0.001"),
        ("paper", ("--arch", "transformer_relpos_base"), "0.001"),
    ],
)
def test_each_profile_and_architecture_has_its_rate(run_script, profile, options, expected):
    arguments = run_script("train-en-tr.sh", None, "--profile", profile, *options)
    assert option(arguments, "--lr") == expected


@pytest.mark.parametrize("profile, beam", [("cpu", 1), ("paper", 5)])
def test_validation_decodes_within_the_fitted_limit(run_script, profile, beam):
    fitted = run_script("train-en-tr.sh", {"target_lang": "tr", "decoding_length": FITTED},
                        "--profile", profile)  # fmt: skip
    assert json.loads(option(fitted, "--eval-bleu-args")) == {
        "beam": beam, "max_len_a": 2.3, "max_len_b": 10
    }  # fmt: skip
    # Data prepared before the limit was fitted (or by stock fairseq-preprocess): 1.2 × src + 10.
    former = run_script("train-en-tr.sh", {"target_lang": "tr"}, "--profile", profile)
    assert json.loads(option(former, "--eval-bleu-args"))["max_len_a"] == 1.2


def test_the_test_set_decodes_within_the_fitted_limit(run_script):
    fitted = run_script("evaluate.sh", {"target_lang": "tr", "decoding_length": FITTED})
    assert (option(fitted, "--max-len-a"), option(fitted, "--max-len-b")) == ("2.3", "10")
    mine = run_script("evaluate.sh", None, "--", "--max-len-b", "50")
    assert (option(mine, "--max-len-a"), option(mine, "--max-len-b")) == (None, "50")
    former = run_script("evaluate.sh", {"target_lang": "tr"})
    assert "--max-len-a" not in former and "--max-len-b" not in former
