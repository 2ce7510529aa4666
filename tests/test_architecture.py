"""The package's structure rules, checked on the source (AST) of every module of ``evaluation``.

* A module imports no other package's private module: only its own package's private modules,
  ``evaluation._util.*`` and ``evaluation._version`` (anything else goes through the package's
  ``__init__``).
* The module-level imports between ``evaluation`` modules form no cycle.
* A package ``__init__`` that re-exports private modules has a sorted ``__all__`` whose names
  all resolve (and so has every other ``__all__``).
* ``evaluation.contract``, the agreement between a participant's run and the leaderboard,
  imports only the standard library and the harness's pure helpers (``evaluation.errors``,
  ``evaluation._version``, ``evaluation._util``); the runner and the server both stand on it
  and import nothing of each other.
* Every dynamic import (``importlib.import_module``, ``__import__``) says why in a comment, and
  there are at most a few: the rules above cannot see them.
* ``evaluation.compat`` (the 2022/2023 layer) stands above the harness: only its entry points
  (the old module paths and the finder of the old module names) import it; the converters the
  modern classes call where old objects enter (``evaluation.legacy``) stand on the foundation
  alone.
* Imports of the package's own modules inside functions are few (at most five), each with a
  comment saying why.

And rules of the repository's tests and benchmarks: no module under ``tests/`` imports a test
module (``test_*``) or a conftest, no benchmark imports anything from ``tests/``, and of
``benchmarks/`` only the helper modules (``_name.py``) are imported, never a script.
"""

from __future__ import annotations

import ast
import functools
import importlib
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from tests._syntax_trees import syntax_tree, walked

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "evaluation"
SHARED = ("evaluation._util", "evaluation._version")


def _modules() -> dict[str, Path]:
    """Dotted name -> file of every module of the package."""
    found = {}
    for path in sorted((ROOT / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def _package_of(module: str) -> str:
    """The package a module belongs to (a package ``__init__`` belongs to itself)."""
    return module if MODULES[module].name == "__init__.py" else module.rpartition(".")[0]


def _resolve(module: str, node: ast.ImportFrom) -> str:
    """The absolute module name of a ``from ... import`` statement."""
    if not node.level:
        return node.module or ""
    base = _package_of(module).split(".")
    base = base[: len(base) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def _targets(module: str, node: ast.stmt) -> list[str]:
    """The package modules an import statement loads (a submodule named in ``from`` counts)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name.split(".")[0] == PACKAGE]
    if not isinstance(node, ast.ImportFrom):
        return []
    source = _resolve(module, node)
    if source.split(".")[0] != PACKAGE:
        return []
    subs = [f"{source}.{a.name}" for a in node.names if f"{source}.{a.name}" in MODULES]
    plain = len(subs) < len(node.names)
    return subs + ([source] if plain else [])


def _is_type_checking(node: ast.stmt) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def _top_level_imports(tree: ast.Module) -> list[ast.stmt]:
    """Import statements that run when the module is imported (not in functions or classes,
    not under ``if TYPE_CHECKING``)."""
    found, todo = [], list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        elif isinstance(node, (ast.If, ast.Try, ast.With)) and not _is_type_checking(node):
            for field in ("body", "orelse", "finalbody", "handlers"):
                for child in getattr(node, field, []):
                    todo.extend(child.body if isinstance(child, ast.ExceptHandler) else [child])
    return found


@functools.cache
def trees() -> dict[str, ast.Module]:
    """Every module's syntax tree, parsed once per process, the first time a test asks (parsing
    the package costs ~2 s of CPU, which a test process running none of these tests skips; the
    trees are those that tests/test_diagrams.py reads)."""
    return {name: syntax_tree(path) for name, path in MODULES.items()}


#: Every node under a tree, listed once per process: the rules below read the whole package's
#: trees many times over.
_nodes = walked


def _private_owner(target: str) -> str | None:
    """The package whose private module ``target`` is (None for a public path)."""
    parts = target.split(".")
    for i, part in enumerate(parts):
        if part.startswith("_") and not part.startswith("__"):
            return ".".join(parts[:i])
    return None


def test_no_module_imports_another_packages_private_module():
    bad = []
    for module, tree in trees().items():
        for node in _nodes(tree):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            for target in _targets(module, node):
                owner = _private_owner(target)
                if owner is None or owner == _package_of(module):
                    continue
                if target.startswith(SHARED):
                    continue
                bad.append(f"{MODULES[module].relative_to(ROOT)}:{node.lineno} imports {target}")
    assert not bad, "imports of another package's private module:\n" + "\n".join(bad)


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for module, tree in trees().items():
        for node in _top_level_imports(tree):
            graph[module].update(t for t in _targets(module, node)
                                 if t in MODULES and t != module)
    return graph


def _find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle through each strongly connected group of modules (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return groups


def test_graph_helpers_find_a_cycle():
    assert _find_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _find_cycles({"a": {"b"}, "b": set()}) == []


def test_module_level_imports_have_no_cycle():
    cycles = _find_cycles(_graph())
    assert not cycles, "import cycles among modules:\n" + "\n".join(" <-> ".join(c)
                                                                   for c in cycles)


PACKAGES = sorted(m for m, p in MODULES.items() if p.name == "__init__.py")


def _has_private_modules(package: str) -> bool:
    return any(m.rpartition(".")[0] == package and m.rpartition(".")[2].startswith("_")
               for m in MODULES if m != package)


@pytest.mark.parametrize("package", PACKAGES)
def test_all_is_sorted_and_resolves(package):
    module = importlib.import_module(package)
    names = getattr(module, "__all__", None)
    if names is None:
        # a package of private modules re-exports them; evaluation._util's are imported by path
        assert package == "evaluation._util" or not _has_private_modules(package), \
            f"{package} has private modules but no __all__"
        return
    names = list(names)
    assert names == sorted(names), f"{package}.__all__ is not sorted"
    assert len(set(names)) == len(names), f"{package}.__all__ repeats a name"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        missing = [n for n in names if not hasattr(module, n)]
    assert not missing, f"{package}.__all__ names that do not resolve: {missing}"


# --------------------------------------------------------------------------- the contract

CONTRACT = "evaluation.contract"
#: What the contract may import from the harness: pure standard-library helpers.
CONTRACT_MAY_IMPORT = ("evaluation.errors", "evaluation._version", "evaluation._util",
                       CONTRACT)
#: The standard library's TOML reader before Python 3.11 (tomllib), as a backport.
STDLIB_BACKPORTS = ("tomli",)


def _within(target: str, packages: tuple[str, ...]) -> bool:
    """Whether module ``target`` is one of ``packages`` or inside one of them."""
    return any(target == p or target.startswith(p + ".") for p in packages)


def _all_imports(module: str) -> list[tuple[int, str]]:
    """``(line, absolute module name)`` of every import of ``module``, wherever it stands
    (functions and ``TYPE_CHECKING`` blocks included)."""
    found = []
    for node in _nodes(trees()[module]):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            source = _resolve(module, node)
            found += [(node.lineno, t) for t in _targets(module, node)] \
                or [(node.lineno, source)]
    return found


def _imports_between(importer: str, imported: tuple[str, ...]) -> list[str]:
    """Each import by a module of package ``importer`` of a module within ``imported``."""
    return [f"{MODULES[m].relative_to(ROOT)}:{line} imports {target}"
            for m in MODULES if _within(m, (importer,))
            for line, target in _all_imports(m) if _within(target, imported)]


def test_the_contract_imports_only_the_standard_library_and_pure_helpers():
    stdlib = sys.stdlib_module_names
    bad = [f"{MODULES[m].relative_to(ROOT)}:{line} imports {target}"
           for m in MODULES if _within(m, (CONTRACT,))
           for line, target in _all_imports(m)
           if not (target.split(".")[0] in stdlib or target in STDLIB_BACKPORTS
                   or _within(target, CONTRACT_MAY_IMPORT))]
    assert not bad, "the contract imports beyond the standard library:\n" + "\n".join(bad)


def test_the_server_does_not_import_the_runner():
    bad = _imports_between("evaluation.server", ("evaluation.runner",))
    assert not bad, "the server imports the runner:\n" + "\n".join(bad)


def test_the_runner_does_not_import_the_server():
    bad = _imports_between("evaluation.runner", ("evaluation.server",))
    assert not bad, "the runner imports the server:\n" + "\n".join(bad)


def test_both_sides_stand_on_the_contract():
    for side in ("evaluation.runner", "evaluation.server"):
        assert _imports_between(side, (CONTRACT,)), f"{side} does not import {CONTRACT}"


def test_the_import_rules_see_a_forbidden_import():
    # the helpers find an import inside a function as well as at the top
    tree = ast.parse("def f():\n    from evaluation.runner import run_hash\n")
    trees()["evaluation.server._probe"] = tree
    MODULES["evaluation.server._probe"] = MODULES["evaluation.server"]
    try:
        assert _imports_between("evaluation.server", ("evaluation.runner",)) == [
            "evaluation/server/__init__.py:2 imports evaluation.runner"]
    finally:
        del trees()["evaluation.server._probe"], MODULES["evaluation.server._probe"]


def test_importing_the_contract_loads_no_third_party_package():
    heavy = ("numpy", "pandas", "pydantic", "requests", "fastapi", "sqlalchemy", "dotenv",
             "rich", "tqdm", "ray")
    code = (f"import sys, evaluation.contract\n"
            f"print(','.join(m for m in {heavy!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, timeout=120, check=True)
    assert out.stdout.strip() == "", f"importing evaluation.contract loads {out.stdout}"


# --------------------------------------------------------------------------- dynamic imports

#: The comment that justifies a dynamic import, on its line or just above it.
JUSTIFIED_DYNAMIC_IMPORT = "# importlib:"
#: At most this many dynamic imports in the whole package.
MAX_DYNAMIC_IMPORTS = 5


def _dynamic_imports(module: str) -> list[ast.Call]:
    """The calls of ``importlib.import_module``, ``import_module`` and ``__import__`` in
    ``module``: imports that the rules above cannot see."""
    found = []
    for node in _nodes(trees()[module]):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if name in ("import_module", "__import__"):
            found.append(node)
    return found


def _justified(module: str, line: int) -> bool:
    """Whether the line ``line`` of ``module``, or one of the three above it, carries the
    comment that justifies a dynamic import."""
    lines = MODULES[module].read_text().splitlines()
    return any(JUSTIFIED_DYNAMIC_IMPORT in text for text in lines[max(0, line - 4):line])


def _unjustified_dynamic_imports() -> tuple[list[str], int]:
    """``(each dynamic import without its comment, how many there are in all)``."""
    bad, count = [], 0
    for module in MODULES:
        for call in _dynamic_imports(module):
            count += 1
            if not _justified(module, call.lineno):
                bad.append(f"{MODULES[module].relative_to(ROOT)}:{call.lineno}: "
                           f"{ast.unparse(call)}")
    return bad, count


def test_every_dynamic_import_says_why_and_they_are_few():
    """An import by name at run time (``importlib.import_module``) hides a dependency from
    the rules above: each one needs a comment saying why a plain import would not do."""
    bad, count = _unjustified_dynamic_imports()
    assert not bad, (f"dynamic imports without a '{JUSTIFIED_DYNAMIC_IMPORT} why' comment "
                     f"(import the module plainly, or say why not):\n" + "\n".join(bad))
    assert count <= MAX_DYNAMIC_IMPORTS, f"{count} dynamic imports; at most " \
                                         f"{MAX_DYNAMIC_IMPORTS}: import modules plainly"


def test_the_package_s_names_imported_by_name_come_from_its_public_subpackages():
    """``evaluation/__init__.py`` imports its public names on first use, by the table
    ``_EXPORTS`` (its one dynamic import): each entry names a public subpackage (or module) of
    the package that offers the name (in its ``__all__``, where it has one)."""
    import evaluation

    for name, module in evaluation._EXPORTS.items():
        full = f"{PACKAGE}.{module}"
        assert full in MODULES and _private_owner(full) is None, (name, module)
        offered = importlib.import_module(full)
        assert name in getattr(offered, "__all__", vars(offered)), (name, module)


def test_the_dynamic_import_rule_sees_an_unjustified_one():
    name = "evaluation.challenge._probe"
    trees()[name] = ast.parse("import importlib\n\ndef f():\n"
                            "    return importlib.import_module('evaluation.runner')\n")
    MODULES[name] = MODULES["evaluation.challenge"]  # a file without the comment there
    try:
        bad, _ = _unjustified_dynamic_imports()
        assert any("importlib.import_module('evaluation.runner')" in b for b in bad)
    finally:
        del trees()[name], MODULES[name]


# --------------------------------------------------------------------------- the compat boundary

COMPAT = "evaluation.compat"
#: The entry points of the compatibility layer, which go with it: the old module paths, and
#: the finder of the old module names (which ``evaluation/__init__.py`` installs).
COMPAT_ENTRY_MODULES = ("evaluation.EvalRSRunner", "evaluation.EvalRSRecList",
                        "evaluation.utils", "evaluation._old_modules")
#: The converters of old arguments and calls, which the dataset and the RecList call.
LEGACY = "evaluation.legacy"
#: What the converters may import of the harness: the foundation.
LEGACY_MAY_IMPORT = ("evaluation.errors", "evaluation._version", "evaluation._util", LEGACY)
#: The comment that justifies an import inside a function of the package's own modules.
DEFERRED = "Deferred on purpose"
#: At most this many imports of the package's own modules inside functions.
MAX_IMPORTS_IN_FUNCTIONS = 5


def _imports_of_compat_outside_it() -> list[str]:
    """Each import of ``evaluation.compat`` by a module that is not the layer or one of its
    entry points, wherever it stands (the layer stands above every modern module)."""
    return [f"{MODULES[m].relative_to(ROOT)}:{line} imports {target}"
            for m in MODULES if not _within(m, (COMPAT, *COMPAT_ENTRY_MODULES))
            for line, target in _all_imports(m) if _within(target, (COMPAT,))]


def test_only_the_entry_points_of_the_compatibility_layer_import_it():
    """``evaluation.compat`` stands above the harness: no modern module imports it, not even
    inside a function, so that a modern run never loads it and the folder can be deleted
    with its entry points. Old objects that reach a modern class are converted by
    ``evaluation.legacy``, below it."""
    bad = _imports_of_compat_outside_it()
    assert not bad, "imports of evaluation.compat by modern modules:\n" + "\n".join(bad)


def test_the_compat_boundary_rule_sees_an_import_even_inside_a_function():
    name = "evaluation.runner._probe"
    trees()[name] = ast.parse("def f():\n    from evaluation.compat import warn_once\n")
    MODULES[name] = MODULES["evaluation.runner"]
    try:
        assert _imports_of_compat_outside_it() == [
            "evaluation/runner/__init__.py:2 imports evaluation.compat"]
    finally:
        del trees()[name], MODULES[name]


def test_only_the_package_s_init_imports_an_entry_point_of_the_compatibility_layer():
    """The old module paths and the finder stand on top: the harness below them imports none
    (``evaluation/__init__.py`` installs the finder; the layer's own modules are not modern)."""
    bad = [f"{MODULES[m].relative_to(ROOT)}:{line} imports {target}"
           for m in MODULES if m != PACKAGE and not _within(m, (COMPAT, *COMPAT_ENTRY_MODULES))
           for line, target in _all_imports(m) if _within(target, COMPAT_ENTRY_MODULES)]
    assert not bad, "imports of the compatibility layer's entry points:\n" + "\n".join(bad)


def test_the_converters_of_old_calls_stand_on_the_foundation():
    """``evaluation.legacy`` is called by the dataset and the RecList where an old object
    enters: it imports only the foundation, so it points up to nothing."""
    bad = [f"{MODULES[m].relative_to(ROOT)}:{line} imports {target}"
           for m in MODULES if _within(m, (LEGACY,))
           for line, target in _all_imports(m)
           if target.split(".")[0] == PACKAGE and not _within(target, LEGACY_MAY_IMPORT)]
    assert not bad, "evaluation.legacy imports above the foundation:\n" + "\n".join(bad)


def _package_imports_in_functions() -> list[tuple[str, int, bool]]:
    """``(file, line, whether it says why)`` of each import of the package's own modules
    inside a function (a ``Deferred on purpose`` comment within the four lines above it)."""
    found = []
    for module, tree in trees().items():
        lines = MODULES[module].read_text().splitlines()
        seen: set[int] = set()
        for func in _nodes(tree):
            if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                continue
            for node in _nodes(func):
                if id(node) in seen or not isinstance(node, (ast.Import, ast.ImportFrom)) \
                        or not _targets(module, node):
                    continue
                seen.add(id(node))
                said = any(DEFERRED in text
                           for text in lines[max(0, node.lineno - 8):node.lineno])
                found.append((str(MODULES[module].relative_to(ROOT)), node.lineno, said))
    return sorted(found)


def test_imports_inside_functions_are_few_and_say_why():
    """An import of the package inside a function hides an arrow from a reader of the
    module's head (and, to dodge a circle, hides a circle): at most five, each with a
    comment saying why a module-level import would not do."""
    found = _package_imports_in_functions()
    unsaid = [f"{path}:{line}" for path, line, said in found if not said]
    assert not unsaid, (f"imports of the package inside functions without a "
                        f"'{DEFERRED}' comment saying why:\n" + "\n".join(unsaid))
    assert len(found) <= MAX_IMPORTS_IN_FUNCTIONS, (
        f"{len(found)} imports of the package inside functions (at most "
        f"{MAX_IMPORTS_IN_FUNCTIONS}): import at the top of the module:\n"
        + "\n".join(f"{path}:{line}" for path, line, _ in found))


def test_the_in_function_import_rule_sees_an_unsaid_one():
    name = "evaluation.challenge._probe"
    trees()[name] = ast.parse("def f():\n    from evaluation.runner import run_hash\n")
    MODULES[name] = MODULES["evaluation.challenge"]
    try:
        found = _package_imports_in_functions()
        assert ("evaluation/challenge/__init__.py", 2, False) in found
    finally:
        del trees()[name], MODULES[name]


# --------------------------------------------------------------------------- the server's layout

SERVER = "evaluation.server"
#: Most module-level imports one after another among the server's modules (a name imported
#: from a subpackage's ``__init__`` counts from the module that defines it): a deep chain
#: makes every module drag in the whole server.
MAX_SERVER_CHAIN = 6
#: Imports of the package's own modules inside a function, in the server and the command
#: line, each with its reason beside it: (file, imported module).
IMPORTS_IN_FUNCTIONS: set[tuple[str, str]] = set()


def _defining_module(package: str, name: str) -> str:
    """The module that defines ``name`` re-exported by ``package``'s ``__init__`` (the package
    itself when it defines it or does not re-export it)."""
    for node in _top_level_imports(trees()[package]):
        if isinstance(node, ast.ImportFrom) and any((a.asname or a.name) == name
                                                    for a in node.names):
            source = _resolve(package, node)
            if source in MODULES and MODULES[source].name == "__init__.py" \
                    and source != package:
                return _defining_module(source, name)
            return source if source in MODULES else package
    return package


def _server_graph() -> dict[str, set[str]]:
    """The server's module-level imports, a re-exported name followed to its module."""
    graph: dict[str, set[str]] = {}
    for module, tree in trees().items():
        if not _within(module, (SERVER,)) or MODULES[module].name == "__init__.py":
            continue
        found = graph.setdefault(module, set())
        for node in _top_level_imports(tree):
            for target in _targets(module, node):
                if not _within(target, (SERVER,)):
                    continue
                if MODULES.get(target, Path()).name == "__init__.py" \
                        and isinstance(node, ast.ImportFrom):
                    found.update(_defining_module(target, a.name) for a in node.names
                                 if f"{target}.{a.name}" not in MODULES)
                else:
                    found.add(target)
        found.discard(module)
    return graph


def _longest_chain(graph: dict[str, set[str]]) -> list[str]:
    """The longest path of imports in ``graph`` (it has no cycle: see above)."""
    longest: dict[str, list[str]] = {}

    def visit(module: str) -> list[str]:
        if module not in longest:
            below = [visit(t) for t in sorted(graph.get(module, ())) if t in graph]
            longest[module] = [module] + max(below, key=len, default=[])
        return longest[module]

    return max((visit(m) for m in sorted(graph)), key=len, default=[])


def test_chain_helper_finds_the_longest_path():
    assert _longest_chain({"a": {"b", "c"}, "b": {"c"}, "c": set()}) == ["a", "b", "c"]


def test_the_servers_import_chains_are_short():
    chain = _longest_chain(_server_graph())
    assert len(chain) - 1 <= MAX_SERVER_CHAIN, (
        f"a chain of {len(chain) - 1} module-level imports in the server (at most "
        f"{MAX_SERVER_CHAIN}): {' -> '.join(chain)}; import what a module needs from a lower "
        f"layer (db, core) rather than through a module that imports more")


def _imports_in_functions(module: str) -> list[tuple[int, str]]:
    """``(line, module)`` of each import of a package module inside a function of ``module``."""
    found = []
    for node in _nodes(trees()[module]):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for inner in _nodes(node):
                if isinstance(inner, (ast.Import, ast.ImportFrom)):
                    found += [(inner.lineno, t) for t in _targets(module, inner)]
    return found


def test_the_server_and_the_command_line_import_the_package_at_module_level():
    found = {(str(MODULES[m].relative_to(ROOT)), target, line)
             for m in MODULES if _within(m, (SERVER, "evaluation.cli"))
             for line, target in _imports_in_functions(m)}
    bad = sorted(f"{path}:{line} imports {target}" for path, target, line in found
                 if (path, target) not in IMPORTS_IN_FUNCTIONS)
    assert not bad, ("imports of the package inside functions (import at the top; a command "
                     "whose work needs an optional extra is loaded by "
                     "evaluation.cli._commands.command):\n" + "\n".join(bad))


# --------------------------------------------------------------------- tests and benchmarks

def _source_files(folder: str) -> list[Path]:
    return sorted(p for p in (ROOT / folder).rglob("*.py") if "__pycache__" not in p.parts)


def _dotted(path: Path) -> str:
    """The module name of a file under the repository root (``tests/a/b.py``: ``tests.a.b``)."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@functools.cache
def _imported_modules(path: Path) -> list[tuple[int, str]]:
    """``(line, absolute module name)`` of every module an import in ``path`` names, wherever
    the import stands; ``from package import name`` counts ``package.name`` too (it may be a
    module), and a relative import is resolved against the file's package. Read once per
    process: two rules read every file under tests/ and benchmarks/."""
    package = _dotted(path) if path.name == "__init__.py" else _dotted(path).rpartition(".")[0]
    found = []
    for node in walked(syntax_tree(path)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] \
                if node.level else []
            source = ".".join(base + ([node.module] if node.module else []))
            found.append((node.lineno, source))
            found += [(node.lineno, f"{source}.{alias.name}") for alias in node.names]
    return sorted(found)


def _is_test_module(module: str) -> bool:
    """Whether ``module`` is one pytest collects or loads itself: a ``test_*`` or a conftest."""
    last = module.rpartition(".")[2]
    return last.startswith("test_") or last == "conftest"


def _test_module_imports(folder: str) -> list[tuple[str, int, str]]:
    return [(path.relative_to(ROOT).as_posix(), line, module)
            for path in _source_files(folder)
            for line, module in _imported_modules(path)
            if module.split(".")[0] in ("tests", "benchmarks") and _is_test_module(module)]


def test_no_test_module_imports_another():
    # Tests share fixtures through conftest.py and helpers through modules named _name.py;
    # importing a test module runs its tests' module-level code twice and ties two files'
    # tests together, and importing a conftest registers its fixtures twice.
    found = _test_module_imports("tests")
    bad = [f"{file}:{line} imports {module}" for file, line, module in found]
    assert not bad, ("modules under tests/ import a test module or a conftest (move what they "
                     "share into a conftest.py fixture or a _name.py helper):\n"
                     + "\n".join(bad))


def test_benchmarks_import_nothing_from_the_tests():
    # A benchmark runs from a clone without the test suite's set-up; what a benchmark and a
    # test share (the 2022 references, the template checkout, PostgreSQL) is in benchmarks/.
    bad = [f"{path.relative_to(ROOT)}:{line} imports {module}"
           for path in _source_files("benchmarks")
           for line, module in _imported_modules(path) if module.split(".")[0] == "tests"]
    assert not bad, ("benchmarks import from tests/ (move what they share into a module "
                     "benchmarks/_name.py):\n" + "\n".join(bad))


def test_only_the_benchmarks_helper_modules_are_imported():
    # a benchmark script is run, not imported: what two scripts (or a script and a test)
    # share is a helper module benchmarks/_name.py
    bad = [f"{path.relative_to(ROOT)}:{line} imports {module}"
           for folder in ("benchmarks", "tests") for path in _source_files(folder)
           for line, module in _imported_modules(path)
           if module.split(".")[0] == "benchmarks" and module.count(".")
           and not module.split(".")[1].startswith("_")]
    assert not bad, ("benchmark scripts imported (move what is shared into a module "
                     "benchmarks/_name.py):\n" + "\n".join(bad))


def test_the_test_import_rule_sees_a_forbidden_import(tmp_path, monkeypatch):
    # an import inside a function, a relative one and `from package import test_module` count
    folder = tmp_path / "tests" / "area"
    folder.mkdir(parents=True)
    (folder / "test_a.py").write_text(
        "from tests.area._helpers import x\n"
        "def test_it():\n    from tests.other.test_b import y\n"
        "from . import test_c\nfrom .conftest import fixture\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    assert _test_module_imports("tests") == [
        ("tests/area/test_a.py", 3, "tests.other.test_b"),
        ("tests/area/test_a.py", 4, "tests.area.test_c"),
        ("tests/area/test_a.py", 5, "tests.area.conftest"),
    ]
