"""Every command of the README, the guides and the results pages (docs/, with docs/results/) parses
with the program it calls: an option renamed in a script or a module, a required value gone or a
script moved fails here, naming the document, the line and what the program said
(tests/doc_commands.py). They name each command by the front door, `fairseq-struct COMMAND`."""

import re
import tempfile
from pathlib import Path
from typing import List, Optional, Tuple

import pytest
from conftest import REPO_ROOT
from doc_commands import UNCHECKED, Command, check, checker, commands

from fairseq_struct.commands import COMMANDS

DOCUMENTS = [REPO_ROOT / "README.md"] + sorted((REPO_ROOT / "docs").rglob("*.md"))
ALL = [command for document in DOCUMENTS for command in commands(document)]


def test_the_documents_have_the_commands_of_each_kind():
    checked = [command for command in ALL if checker(command) is not None]
    programs = {command.words[0].split("/")[-1] for command in checked}
    assert len(checked) >= 60, len(checked)
    assert {"fairseq-train", "fairseq-struct"} <= programs, programs
    assert any(command.words[:2] == ["fairseq-struct", "translate"] for command in checked)
    assert any(word.startswith("scripts/") for c in checked for word in c.words[:2])


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda path: str(path.relative_to(REPO_ROOT)))
def test_every_command_parses(document):
    errors = []
    for command in commands(document):
        error = check(command)
        if error not in (None, UNCHECKED):
            errors.append(f"{command.where()}\n    -> {error}")
    assert errors == [], "\n".join(errors)


def documented(text: str) -> Command:
    (command,) = commands_of(text)
    return command


def commands_of(text: str):
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "guide.md"
        path.write_text(f"```bash\n{text}\n```\n", encoding="utf-8")
        return list(commands(path))


@pytest.mark.parametrize(
    "text, error",
    [
        ("scripts/train-en-tr.sh --data d --savedir c", "unknown option '--savedir'"),
        ("scripts/train-en-tr.sh --data d", "--data and --save-dir are required"),
        ("bash scripts/no-such.sh --x", "scripts/no-such.sh does not exist"),
        (
            "fairseq-struct translate --path c.pt --data d --beamm 5",
            "unrecognized arguments: --beamm 5",
        ),
        ("python -m fairseq_struct.eval.score --hyp h --ref", "expected one argument"),
        ("fairseq-struct scor --hyp h", "fairseq-struct: 'scor' is not a command"),
        (
            'fairseq-train data-bin --user-dir "$USER_DIR" --arch tp_transformer_tiny '
            "--task translation_morph --max-tokens 100 --role-bindng plain",
            "unrecognized arguments: --role-bindng plain",
        ),
    ],
)
def test_a_wrong_command_is_named_with_what_its_program_says(text, error):
    result = check(documented(text))
    assert result is not None and error in result, result


def test_elided_arguments_may_leave_out_a_required_one_but_not_misspell_one():
    assert check(documented("scripts/train-en-tr.sh --data d ...")) is None
    assert "unknown option" in check(documented("scripts/train-en-tr.sh --dta d ..."))


def test_variables_launchers_and_continuations_are_read_as_a_shell_would():
    (command,) = commands_of(
        "DATA=data-bin/en-tr\n"
        "OMP_NUM_THREADS=1 torchrun --nproc_per_node 2 $(which fairseq-train) $DATA \\\n"
        "  --user-dir $USER_DIR --arch tp_transformer_tiny --task translation_morph  # comment"
    )
    assert command.words == [
        "torchrun", "--nproc_per_node", "2", "fairseq-train", "data-bin/en-tr",
        "--user-dir", str(REPO_ROOT / "fairseq_struct"), "--arch", "tp_transformer_tiny",
        "--task", "translation_morph",
    ]  # fmt: skip
    assert command.line == 3 and not command.elided  # the line in the document (fence: 1)
    assert check(command) is None


def test_unknown_programs_are_left_alone():
    assert check(documented("make demo")) == UNCHECKED
    assert check(documented("pip install fairseq-struct/")) == UNCHECKED


GUIDES = sorted({REPO_ROOT / "README.md", REPO_ROOT / "benchmarks" / "README.md", *DOCUMENTS})
MODULE_FORM = "python -m fairseq_struct"
# A row of docs/reference.md's table of the commands: group, command, its module.
MAPPING_ROW = re.compile(
    r"^\| [^|]+ \| `fairseq-struct (?P<name>[\w-]+)` \| `python -m (?P<module>[\w.]+)`"
)


def module_form_mentions(document: Path) -> List[Tuple[int, Optional[str], str]]:
    """(line, section heading, text) of each line of the document that names a command by its
    `python -m` form, leaving out the two places meant for it: a row of docs/reference.md's
    table that maps each command to its module (when the row is right), and the `## Commands`
    section of a grid's report.md (grid/provenance.py: the command lines that ran, as they ran;
    a grid runs its steps with `python -m`)."""
    found: List[Tuple[int, Optional[str], str]] = []
    section, fenced = None, False
    for number, line in enumerate(document.read_text(encoding="utf-8").splitlines(), start=1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced and line.startswith("## "):
            section = line
        if MODULE_FORM not in line:
            continue
        row = MAPPING_ROW.match(line)
        if document.name == "reference.md" and row:
            if COMMANDS.get(row["name"]) == row["module"]:
                continue
        if document.name == "report.md" and section == "## Commands":
            continue
        found.append((number, section, line.strip()))
    return found


def test_the_guides_name_commands_by_the_front_door():
    """`python -m fairseq_struct...` appears in no guide but where the README's install section
    says both forms work, and in the mappings above."""
    mentions = [
        f"{guide.relative_to(REPO_ROOT)}:{number}: {text}"
        for guide in GUIDES
        if guide != REPO_ROOT / "README.md"
        for number, _, text in module_form_mentions(guide)
    ]
    assert mentions == [], "name the command `fairseq-struct NAME`:\n" + "\n".join(mentions)
    readme = module_form_mentions(REPO_ROOT / "README.md")
    assert [section for _, section, _ in readme] == ["## Install"], readme


def test_reference_maps_every_command_to_its_module():
    text = (REPO_ROOT / "docs" / "reference.md").read_text(encoding="utf-8")
    rows = {row["name"]: row["module"] for row in map(MAPPING_ROW.match, text.splitlines()) if row}
    assert rows == COMMANDS
