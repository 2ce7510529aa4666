"""Syntax trees of the repository's Python files, parsed once per test process.

The architecture rules (``tests/test_architecture.py``) and the architecture picture's test
(``tests/test_diagrams.py``) both read every module of the package, whose parsing and walking
cost ~2 CPU-s; the rules about the tests read every file under ``tests/`` and ``benchmarks/``.
The trees are shared: a test never changes one.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path


@functools.cache
def syntax_tree(path: Path) -> ast.Module:
    """The syntax tree of the file ``path`` (read as UTF-8)."""
    return ast.parse(path.read_text(encoding="utf-8"), str(path))


@functools.cache
def walked(tree: ast.AST) -> tuple[ast.AST, ...]:
    """Every node under ``tree`` (itself included), in ``ast.walk``'s order."""
    return tuple(ast.walk(tree))
