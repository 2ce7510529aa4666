"""A model's checkout code: the files of its checkout that its code imports, found by reading
their import statements.

The checkout is the folder that holds the top-level package (or module) of the model class's
module: for ``submission.MyModel`` loaded from ``<checkout>/submission/MyModel.py``, the folder
``<checkout>``; for a class without a file (a notebook's), the working directory. Starting
from the modules that define the class and the classes it derives from, every ``import`` and
``from ... import`` statement (at the top of a module or inside a function: an import made
only once training starts counts too) that names a module of the checkout adds that module,
with the ``__init__.py`` of each package above it, and is followed in turn.

Left out, whatever the imports say: the environment (``sys.prefix``, site-packages, the
standard library; a ``.venv`` inside the checkout included) and the harness (its version is
recorded apart). Reading the imports rather than listing ``sys.modules`` makes the set the
same in every process that runs the model: a notebook's or a test session's other modules do
not enter it, and ``submission.py`` and a reproduction's worker find the same files. A module
imported by name at run time (``importlib.import_module``) is not seen: the runner names such
modules after the folds (:func:`loaded_checkout_modules`).
"""

from __future__ import annotations

import ast
import functools
import hashlib
import os
import site
import sys
import sysconfig
import types
from collections.abc import Iterator
from pathlib import Path

from evaluation._util.syntax_trees import SYNTAX_TREES

#: The checkout's file of package specifiers, hashed when it exists.
REQUIREMENTS_FILE = "requirements.txt"
#: The harness's own folder (``evaluation/``): its modules are the harness's version, which
#: the run records apart, never the model's code.
_HARNESS_DIR = Path(__file__).resolve().parents[1]
#: The harness's top-level modules: its package and the start-up hook of the 2022/2023
#: module names (which an editable install loads from the harness's own checkout).
_HARNESS_MODULES = frozenset({_HARNESS_DIR.name, "_evalrs_startup"})


def checkout_root(cls: type) -> Path | None:
    """The folder that holds the top-level package or module of ``cls``'s module (resolved);
    the working directory for a class without a file; None for a class of the harness."""
    name = cls.__module__
    if name.split(".", 1)[0] in _HARNESS_MODULES:
        return None
    module = sys.modules.get(name)
    file = getattr(module, "__file__", None)
    if not isinstance(file, str):
        return Path.cwd().resolve()
    path = Path(file).resolve()
    # one folder up per dotted level, and one more for a package's own __init__ file
    depth = name.count(".") + (1 if hasattr(module, "__path__") else 0)
    if depth >= len(path.parents) or path.is_relative_to(_HARNESS_DIR):
        return None
    return path.parents[depth]


def checkout_files(cls: type) -> dict[str, tuple[str, Path]]:
    """The checkout files of ``cls``'s code: path relative to the checkout (POSIX) -> (module
    name, file), sorted by path; empty for a class of the harness."""
    root = checkout_root(cls)
    if root is None:
        return {}
    skip = _environment_prefixes()
    todo = list(_class_modules(cls, skip))
    found: dict[str, tuple[str, Path]] = {}
    while todo:
        name, path = todo.pop()
        if not _in_checkout(path, root, skip):
            continue
        rel = path.relative_to(root).as_posix()
        if rel in found:
            continue
        found[rel] = (name, path)
        todo.extend(_package_files(name, root, skip))
        if path.suffix == ".py":
            todo.extend(_imported(name, path, root, skip))
    return dict(sorted(found.items()))


def requirements_sha256(cls: type) -> str | None:
    """The sha256 of the checkout's ``requirements.txt``; None without one (or a checkout)."""
    root = checkout_root(cls)
    path = None if root is None else root / REQUIREMENTS_FILE
    return file_sha256(path) if path is not None and path.is_file() else None


def loaded_checkout_modules(cls: type) -> set[str]:
    """The files (relative paths) of ``cls``'s checkout that this process has loaded as
    modules: compared before and after the folds, it shows the modules imported by name."""
    root = checkout_root(cls)
    if root is None:
        return set()
    skip = _environment_prefixes()
    found = set()
    for name, module in list(sys.modules.items()):
        path = _module_file(name, module, skip)
        if path is not None and name != "__main__" and _in_checkout(path, root, skip):
            found.add(path.relative_to(root).as_posix())
    return found


def file_sha256(path: Path) -> str:
    """The hex sha256 of the bytes of the file at ``path``."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _class_modules(cls: type, skip: tuple[str, ...]) -> Iterator[tuple[str, Path]]:
    """The modules (name, file) that define ``cls`` and its bases; for a class without a file
    (a notebook's), the modules its methods' globals hold or come from."""
    for klass in cls.__mro__:
        module = sys.modules.get(klass.__module__)
        if isinstance(getattr(module, "__file__", None), str):
            path = _module_file(klass.__module__, module, skip)
            if path is not None:
                yield klass.__module__, path
            continue
        for value in vars(klass).values():
            for name, held in _referenced_modules(getattr(value, "__globals__", None)):
                path = _module_file(name, held, skip)
                if path is not None:
                    yield name, path


def _referenced_modules(namespace) -> Iterator[tuple[str, types.ModuleType]]:
    """The modules a namespace holds, or whose functions and classes it holds."""
    if not isinstance(namespace, dict):
        return
    for value in list(namespace.values()):
        if isinstance(value, types.ModuleType):
            yield value.__name__, value
        elif isinstance(value, (type, types.FunctionType)):
            module = sys.modules.get(getattr(value, "__module__", None) or "")
            if module is not None:
                yield module.__name__, module


def _module_file(name: str, module, skip: tuple[str, ...]) -> Path | None:
    """The resolved file of a loaded module; None without one or where it starts with one
    of ``skip`` (tested before resolving: it spares resolving most modules' paths)."""
    if name.split(".", 1)[0] in _HARNESS_MODULES:
        return None
    file = getattr(module, "__file__", None)
    if not isinstance(file, str) or (skip and file.startswith(skip)):
        return None
    return Path(file).resolve()


def _in_checkout(path: Path, root: Path, skip: tuple[str, ...]) -> bool:
    """Whether ``path`` is a file of the checkout: under ``root``, not the environment's
    (``skip``) and not the harness's."""
    return path != root and path.is_relative_to(root) and not str(path).startswith(skip) \
        and not path.is_relative_to(_HARNESS_DIR) and path.is_file()


def _package_files(name: str, root: Path, skip: tuple[str, ...]
                   ) -> Iterator[tuple[str, Path]]:
    """The ``__init__`` files of the packages above module ``name`` (run when it is imported)."""
    parts = name.split(".")
    for depth in range(1, len(parts)):
        package = ".".join(parts[:depth])
        path = _find(package, root, skip)
        if path is not None:
            yield package, path


def _imported(name: str, path: Path, root: Path, skip: tuple[str, ...]
              ) -> Iterator[tuple[str, Path]]:
    """The checkout modules that the import statements of ``path`` (module ``name``) name."""
    try:
        source = path.read_bytes()
    except OSError:
        return  # not importable as it is
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for imported in _import_names(source, str(path), package):
        found = _find(imported, root, skip)
        if found is not None:
            yield imported, found


@functools.lru_cache(maxsize=256)
def _import_names(source: bytes, filename: str, package: str) -> tuple[str, ...]:
    """The absolute module names that the import statements of ``source`` (a module of
    ``package``) name, in the order of the syntax tree's walk; none for a source that does
    not parse. Kept by content: a run in a process that ran before reads each unchanged file
    of its checkout without building its syntax tree again."""
    try:
        with SYNTAX_TREES:  # one syntax tree at a time (CPython 3.11)
            tree = ast.parse(source, filename=filename)
    except (SyntaxError, ValueError):
        return ()  # not importable as it is: only its bytes count
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node.module, node.level, package)
            if base is not None:
                names.append(base)
                names.extend(f"{base}.{alias.name}" for alias in node.names
                             if alias.name != "*")
    return tuple(names)


def _absolute(module: str | None, level: int, package: str) -> str | None:
    """The absolute name of ``from <level dots><module> import ...`` in ``package``."""
    if level == 0:
        return module
    parts = package.split(".") if package else []
    if level - 1 > len(parts) or not parts:
        return None  # beyond the top-level package (or a script's relative import)
    base = parts[:len(parts) - (level - 1)]
    return ".".join(base + ([module] if module else []))


def _find(name: str, root: Path, skip: tuple[str, ...]) -> Path | None:
    """The file of module ``name`` in the checkout: ``<root>/a/b/c/__init__.py`` or
    ``<root>/a/b/c.py`` (a package first, as Python's own finder looks: ``submission/`` and
    ``submission.py`` lie side by side), else the file of a loaded module of that name (a
    checkout whose modules lie in a folder of their own, ``src/``), None where it starts with
    one of ``skip``; None otherwise.

    The checkout's own layout comes first, so that the files found do not depend on what the
    process loaded before (a test session's or a notebook's other packages).
    """
    if not name or name.split(".", 1)[0] in _HARNESS_MODULES:
        return None
    folder = root.joinpath(*name.split("."))
    for path in (folder / "__init__.py", folder.with_name(folder.name + ".py")):
        if path.is_file():
            return path.resolve()
    module = sys.modules.get(name)
    return None if module is None else _module_file(name, module, skip)


def _environment_prefixes() -> tuple[str, ...]:
    """The folders of the environment's own packages and of the standard library, each as
    given and resolved, with a trailing separator."""
    folders = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
               *site.getsitepackages(), site.getusersitepackages()}
    paths = sysconfig.get_paths()
    folders.update(paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")
                   if k in paths)
    out = set()
    for folder in folders:
        if folder:
            out.add(folder.rstrip(os.sep) + os.sep)
            out.add(str(Path(folder).resolve()).rstrip(os.sep) + os.sep)
    return tuple(sorted(out))
