"""No module of the package imports one that imports it back, directly or through others, and no
subpackage one that imports it back: read from the source, imports inside functions included, so
that a lazy import cannot hide a circle. Each module's dependencies form a tree a reader can
follow down."""

import ast
from pathlib import Path
from typing import Dict, List, Set

from conftest import REPO_ROOT

PACKAGE = REPO_ROOT / "fairseq_struct"


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO_ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, modules: Set[str]) -> Set[str]:
    """The package's modules that `path` imports (`from a.b import c` counts a.b, and a.b.c
    where c is a module)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names: List[str] = []
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        found.update(name for name in names if name in modules)
    return found


def import_graph() -> Dict[str, Set[str]]:
    # hf_code/ is copied into exported model directories and imports only torch/transformers.
    paths = [p for p in PACKAGE.rglob("*.py") if "hf_code" not in p.parts]
    modules = {module_name(path): path for path in paths}
    return {
        name: imports_of(path, set(modules)) - {name, "fairseq_struct"}
        for name, path in modules.items()
    }


def circles(graph: Dict[str, Set[str]]) -> List[List[str]]:
    """One circle through each module that reaches itself (depth-first, sorted for stable
    messages)."""
    found, done = [], set()

    def visit(module: str, path: List[str]) -> None:
        for target in sorted(graph.get(module, ())):
            if target in path:
                found.append(path[path.index(target) :] + [target])
            elif target not in done:
                visit(target, path + [target])
        done.add(module)

    for module in sorted(graph):
        if module not in done:
            visit(module, [module])
    return found


def package_graph(graph: Dict[str, Set[str]]) -> Dict[str, Set[str]]:
    """The arrows between the package's subpackages (and top-level modules): fairseq_struct.x."""

    def package(module: str) -> str:
        return ".".join(module.split(".")[:2])

    packages: Dict[str, Set[str]] = {}
    for module, targets in graph.items():
        arrows = packages.setdefault(package(module), set())
        arrows.update(package(target) for target in targets)
    return {name: arrows - {name} for name, arrows in packages.items()}


def test_no_module_imports_one_that_imports_it_back():
    found = circles(import_graph())
    assert found == [], "\n".join(" -> ".join(circle) for circle in found)


def test_no_package_imports_one_that_imports_it_back():
    """modules/ below downstream/ and eval/, eval/ below downstream/, corpus_io below all."""
    found = circles(package_graph(import_graph()))
    assert found == [], "\n".join(" -> ".join(circle) for circle in found)


def test_a_circle_is_found_and_named():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert circles(graph) == [["a", "b", "c", "a"]]
    assert circles({"a": {"b"}, "b": set()}) == []
