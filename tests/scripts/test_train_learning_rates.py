"""train-en-tr.sh's peak learning rate: the cpu profile's 0.003 and the paper profile's 0.001
for every architecture, --lr instead of either. The translation grid leaves the baseline's to
the script and passes the TP-Transformer's (tests/grid/test_translation_grid_lr.py)."""

import os
import subprocess
import sys

import pytest
from conftest import REPO_ROOT


@pytest.fixture(scope="module")
def traced_rate(tmp_path_factory):
    """The --lr that train-en-tr.sh gives fairseq-train, read by a stand-in fairseq-train."""
    root = tmp_path_factory.mktemp("train-lr")
    tools, data = root / "tools", root / "data-bin"
    tools.mkdir()
    data.mkdir()
    for language in ("en", "tr"):
        (data / f"dict.{language}.txt").write_text("a 1\n", encoding="utf-8")
    # A wrapper, not a link: a link to the virtual environment's python would not be in it.
    (tools / "python").write_text(f'#!/bin/bash\nexec "{sys.executable}" "$@"\n')
    (tools / "python").chmod(0o755)
    arguments = root / "arguments"
    (tools / "fairseq-train").write_text(f'#!/bin/bash\nprintf "%s\\n" "$@" > "{arguments}"\n')
    (tools / "fairseq-train").chmod(0o755)
    environment = dict(os.environ, FAIRSEQ_STRUCT_TOOLS=str(tools))

    def rate(profile: str, *options: str) -> str:
        command = ["bash", str(REPO_ROOT / "scripts" / "train-en-tr.sh"), "--profile", profile]
        command += ["--data", str(data), "--save-dir", str(root / "ck"), "--tgt-lang", "tr"]
        subprocess.run([*command, "--cpu", *options], env=environment, check=True, cwd=root,
                       capture_output=True)  # fmt: skip
        passed = arguments.read_text().splitlines()
        return passed[passed.index("--lr") + 1]

    return rate


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
def test_each_profile_and_architecture_has_its_rate(traced_rate, profile, options, expected):
    assert traced_rate(profile, *options) == expected
