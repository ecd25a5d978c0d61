"""The Python blocks of README.md and docs/*.md: each parses, each of its imports works,
and each name it imports is used in it (a block imports what it uses, so that it can be
copied alone).

The blocks are illustrations whose data (``model``, ``val_loader``) the reader supplies,
so they are not run here; but a renamed or moved name breaks a user's first copy, and
that is checked.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)


def _blocks() -> list[tuple[str, str]]:
    files = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    return [
        (f"{path.relative_to(ROOT)}#{i}", code)
        for path in files
        for i, code in enumerate(BLOCK.findall(path.read_text(encoding="utf-8")), 1)
    ]


def _imports(tree: ast.Module) -> list[tuple[str, str | None]]:
    """(module, name) of every ``from module import name`` and ``import module``."""
    found: list[tuple[str, str | None]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            found += [(node.module, alias.name) for alias in node.names]
        elif isinstance(node, ast.Import):
            found += [(alias.name, None) for alias in node.names]
    return found


def test_the_docs_have_python_blocks():
    assert len(_blocks()) >= 10


@pytest.mark.parametrize(("where", "code"), _blocks(), ids=[w for w, _ in _blocks()])
def test_block_parses_and_its_imports_resolve(where: str, code: str):
    tree = ast.parse(code, filename=where)
    for module, name in _imports(tree):
        imported = importlib.import_module(module)
        if name is not None and not hasattr(imported, name):
            importlib.import_module(f"{module}.{name}")  # a submodule, or ImportError


def _used(tree: ast.Module) -> set[str]:
    return {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}


@pytest.mark.parametrize(("where", "code"), _blocks(), ids=[w for w, _ in _blocks()])
def test_block_uses_what_it_imports(where: str, code: str):
    tree = ast.parse(code, filename=where)
    imported = {
        (alias.asname or alias.name).split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    }
    assert imported <= _used(tree), f"{where} imports but never uses {imported - _used(tree)}"
