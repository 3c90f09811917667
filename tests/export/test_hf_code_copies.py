"""The exported Hugging Face code's copies of plugin code still match their sources.

export/hf_code/ is loaded by users with `trust_remote_code=True` and may import only torch and
transformers, so the pieces of the plugin it needs (word structure, 2D positions, attention
projections, the CRF, the Entity-Fix rule, ...) are copies. As transformers does (its
`# Copied from transformers.models.bert.modeling_bert.BertSelfOutput with Bert->Roberta` and
utils/check_copies.py), each copy is marked by a comment line right above it (above its
decorators, if any):

    # Copied from fairseq_struct.<module>.<name>[ with A->B, C->D]

<name> is a function, class, method or property (`Class.method`), or a module constant. For
code, the source's text (`inspect.getsource`) with the renames applied (whole words, in the
order given) must equal the copy's text line for line, comments and blank lines included.
Docstrings may differ, and only they: a copy's docstring is written for a reader of the exported
directory, who has no fairseq_struct to be referred to. For a constant, the copy's literal must
equal the source's value. A copy that drifts from its source fails here, naming its marker: copy
the source again (or change the source so that the copy can be its text again).
"""

import ast
import difflib
import importlib
import inspect
import re
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any, List, Optional, Tuple

import pytest

import fairseq_struct.export

HF_CODE = Path(fairseq_struct.export.__file__).resolve().parent / "hf_code"
MARKER = re.compile(
    r"^\s*# Copied from (?P<target>fairseq_struct(?:\.\w+)+)(?: with (?P<renames>\S+(?:, \S+)*))?$"
)
RENAME = re.compile(r"^(?P<old>[\w.]+)->(?P<new>[\w.]+)$")
DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


@dataclass(frozen=True)
class Marker:
    path: Path
    line: int  # 1-based line of the comment
    target: str
    renames: Tuple[Tuple[str, str], ...]

    def __str__(self) -> str:
        with_renames = ", ".join(f"{old}->{new}" for old, new in self.renames)
        return f"{self.path.name}:{self.line} {self.target}" + (
            f" with {with_renames}" if with_renames else ""
        )


def _marker_lines() -> List[Tuple[Path, int, str]]:
    return [
        (path, number, line)
        for path in sorted(HF_CODE.glob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if re.match(r"\s*#.*Copied from", line)  # a comment: docstrings may name the markers
    ]


def _parse_marker(path: Path, number: int, line: str) -> Marker:
    match = MARKER.match(line)
    assert match, f"{path.name}:{number}: not a `# Copied from fairseq_struct.<name>` marker"
    renames = []
    for item in (match["renames"] or "").split(", ") if match["renames"] else []:
        rename = RENAME.match(item)
        assert rename, f"{path.name}:{number}: {item!r} is not a rename OLD->NEW"
        renames.append((rename["old"], rename["new"]))
    return Marker(path, number, match["target"], tuple(renames))


MARKERS = [_parse_marker(*found) for found in _marker_lines()]


def _resolve(target: str) -> Any:
    """The object a dotted name stands for: the longest importable module prefix, then
    attributes; a class attribute as the class holds it (a property's getter, a static method's
    function)."""
    parts = target.split(".")
    for split in range(len(parts), 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:split]))
        except ModuleNotFoundError:
            continue
        for name in parts[split:]:
            obj = vars(obj)[name] if inspect.isclass(obj) else getattr(obj, name)
        if isinstance(obj, property):
            return obj.fget
        if isinstance(obj, (staticmethod, classmethod)):
            return obj.__func__
        return obj
    raise ImportError(f"no module of {target} can be imported")


def _without_docstrings(code: str) -> str:
    """The lines of code (dedented) less every docstring of a function or class in it."""
    code = textwrap.dedent(code)
    dropped = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, DEFINITIONS) and node.body:
            first = node.body[0]
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                assert first.lineno > node.lineno, "a docstring on its definition's line"
                dropped.update(range(first.lineno, first.end_lineno + 1))
    return "\n".join(
        line for number, line in enumerate(code.splitlines(), start=1) if number not in dropped
    )


def _renamed(code: str, renames: Tuple[Tuple[str, str], ...]) -> str:
    for old, new in renames:
        code = re.sub(rf"(?<!\w){re.escape(old)}(?!\w)", new, code)
    return code


def _copied_node(marker: Marker) -> Optional[ast.AST]:
    """The definition or assignment that starts on the line after the marker."""
    tree = ast.parse(marker.path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, DEFINITIONS):
            start = min([node.lineno] + [d.lineno for d in node.decorator_list])
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            start = node.lineno
        else:
            continue
        if start == marker.line + 1:
            return node
    return None


def test_the_hf_code_marks_its_copies():
    # Not vacuous: the markers are found, and each names one source object.
    assert len(MARKERS) >= 30, [str(marker) for marker in MARKERS]
    targets = [marker.target for marker in MARKERS]
    assert len(set(targets)) == len(targets), "a source object copied twice"


@pytest.mark.parametrize("marker", MARKERS, ids=str)
def test_every_copy_equals_its_source(marker: Marker):
    node = _copied_node(marker)
    assert node is not None, f"{marker}: no definition or assignment right after the marker"
    source = _resolve(marker.target)
    lines = marker.path.read_text(encoding="utf-8").splitlines()

    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        assert len(targets) == 1 and isinstance(targets[0], ast.Name), f"{marker}: one name"
        expected_name = _renamed(marker.target.rsplit(".", 1)[1], marker.renames)
        assert targets[0].id == expected_name, f"{marker}: copied as {targets[0].id}"
        assert (
            ast.literal_eval(node.value) == source
        ), f"{marker}: the copy's value is not the source's {source!r}"
        return

    copy_code = _without_docstrings("\n".join(lines[marker.line : node.end_lineno]))
    source_code = _without_docstrings(_renamed(inspect.getsource(source), marker.renames))
    diff = "\n".join(
        difflib.unified_diff(
            source_code.splitlines(),
            copy_code.splitlines(),
            fromfile=marker.target,
            tofile=f"{marker.path.name}:{marker.line + 1}",
            lineterm="",
        )
    )
    assert copy_code == source_code, f"{marker}: the copy has drifted from its source\n{diff}"
