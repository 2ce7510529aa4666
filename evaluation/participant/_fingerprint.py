"""Model fingerprints: what identifies a model run besides its name.

A run directory is reused (resumed) only for the same model, so the fingerprint covers what
decides a model's output: its code (the source of its class, of the classes it derives from
and of their modules, and every file of its checkout that this code imports: see
:func:`checkout_code`), its parameters before training (the instance ``__dict__`` when
``evaluate`` starts), the training keyword arguments and the checkout's
``requirements.txt``. Parameters and arguments are hashed
by content with ``joblib.hash`` (NumPy arrays and DataFrames by their bytes, containers
element by element), never by ``repr``, which abbreviates large arrays.

Every part is deterministic across processes: a model built the same way in another Python
process gets the same fingerprint.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import linecache
import sys
import types
from collections.abc import Mapping
from typing import Any

from evaluation._util.jsonable import json_sha256
from evaluation._util.syntax_trees import SYNTAX_TREES
from evaluation.participant._checkout_code import (
    REQUIREMENTS_FILE,
    checkout_files,
    file_sha256,
    requirements_sha256,
)

#: Names of the parts that make up the digest, in the order they are compared.
PARTS = ("class", "code", "params", "train_kwargs", "requirements")
#: What each part is called in messages ("model code changed since ...").
PART_LABELS = {"class": "model class", "code": "model code", "params": "model parameters",
               "train_kwargs": "training arguments", "requirements": REQUIREMENTS_FILE}

#: The parts a reproduction compares with the upload: their names and verbs in messages.
COMPARED_PARTS = {"code": ("model code", "differs"), "params": ("model parameters", "differ")}
#: How deep the fallback for values joblib cannot hash looks into containers and objects.
_MAX_DEPTH = 6


def model_fingerprint(model: Any, train_kwargs: Mapping[str, Any]) -> dict:
    """The fingerprint of ``model`` trained with ``train_kwargs``.

    Returns ``{"sha256": digest, "class": qualified name, "code": {...}, "params": {...},
    "train_kwargs": {...}, "requirements": {...}}``. ``code`` holds the digest of the source
    (or, where the source cannot be read, e.g. a class defined in a notebook, of the
    methods' byte code), how each class and module was hashed and the checkout's files
    (``checkout``); ``params`` and ``train_kwargs`` hold a content digest and the names of
    the values that could not be hashed by content (``not_content_hashed``: those count by
    type and a stable description only); ``requirements`` the sha256 of the checkout's
    ``requirements.txt`` (None without one).
    """
    cls = type(model)
    params = vars(model) if hasattr(model, "__dict__") else {}
    parts: dict[str, Any] = {
        "class": f"{cls.__module__}.{cls.__qualname__}",
        "code": code_hash(cls),
        "params": content_hash(dict(params)),
        "train_kwargs": content_hash(dict(train_kwargs)),
        "requirements": {"sha256": requirements_sha256(cls)},
    }
    digests = {name: (parts[name] if name == "class" else parts[name]["sha256"])
               for name in PARTS}
    return {"sha256": json_sha256(digests), **parts}


def changed_parts(old: Mapping, new: Mapping) -> list[str]:
    """Names of the parts (see ``PARTS``) in which two fingerprints differ."""
    def digest(fp: Mapping, name: str):
        value = fp.get(name) if isinstance(fp, Mapping) else None
        return value.get("sha256") if isinstance(value, Mapping) else value

    return [name for name in PARTS if digest(old, name) != digest(new, name)]


def changed_files(old: Mapping, new: Mapping) -> list[str]:
    """The checkout files whose content differs between two fingerprints, added and removed
    ones included, sorted; empty where either records none."""
    def files(fp: Mapping) -> dict[str, str] | None:
        code = fp.get("code") if isinstance(fp, Mapping) else None
        checkout = code.get("checkout") if isinstance(code, Mapping) else None
        if not isinstance(checkout, Mapping) or not isinstance(checkout.get("files"), list):
            return None
        return {str(f.get("path")): str(f.get("sha256")) for f in checkout["files"]
                if isinstance(f, Mapping)}

    a, b = files(old), files(new)
    if a is None or b is None:
        return []
    return sorted(p for p in set(a) | set(b) if a.get(p) != b.get(p))


def compared_code(fingerprint: Mapping) -> str:
    """What a fingerprint's code digest covers, in words: ``"code of 4 modules and
    requirements.txt"``."""
    code = fingerprint.get("code") if isinstance(fingerprint, Mapping) else None
    code = code if isinstance(code, Mapping) else {}
    n = code.get("n_modules")
    text = f"code of {n} module{'s' * (n != 1)}" if isinstance(n, int) else "code"
    requirements = fingerprint.get("requirements") if isinstance(fingerprint, Mapping) else None
    if isinstance(requirements, Mapping) and requirements.get("sha256"):
        text += f" and {REQUIREMENTS_FILE}"
    return text


# --------------------------------------------------------------------------- code


def code_hash(cls: type) -> dict:
    """Digest of the code of ``cls``, of the classes it derives from, of their modules and of
    the files of its checkout that this code imports (:func:`checkout_code`).

    Classes and modules of the standard library and builtins are left out (they change with
    the Python version, not with the model). Where ``inspect.getsource`` fails (a class
    defined in a notebook cell, with ``exec`` or in an interactive session) the class is
    hashed from its methods' byte code, so that an edited method still changes the digest.
    ``n_modules`` counts the distinct modules whose code the digest covers.
    """
    h = hashlib.sha256()
    classes, modules = [], []
    seen_modules: set[str] = set()
    for klass in cls.__mro__:
        module_name = klass.__module__
        if klass is object or _is_stdlib(module_name):
            continue
        h.update(f"class:{module_name}.{klass.__qualname__}\0".encode())
        try:
            class_source = _class_source(klass)
            h.update(class_source.encode())
            method = "source"
        except (OSError, TypeError):
            _hash_class_code(h, klass)
            method = "bytecode"
        classes.append({"class": f"{module_name}.{klass.__qualname__}", "method": method})
        if module_name in seen_modules:
            continue
        seen_modules.add(module_name)
        module = sys.modules.get(module_name)
        h.update(f"module:{module_name}\0".encode())
        source = None if module is None else _module_source(module)
        if source is None:
            method = "unavailable (only the classes' code is hashed)"
        else:
            h.update(source.encode())
            method = "source"
        modules.append({"module": module_name, "method": method})
    checkout = checkout_code(cls)
    h.update(b"checkout\0" + json_sha256(checkout).encode())
    covered = {m["module"] for m in modules if m["method"] == "source"}
    covered.update(f["module"] for f in checkout["files"])
    return {"sha256": h.hexdigest(), "classes": classes, "modules": modules,
            "checkout": checkout, "n_modules": len(covered)}


def checkout_code(cls: type) -> dict:
    """The checkout files of ``cls``'s code (:func:`checkout_files`), each by content.

    Read when the run starts, after the model was imported and built and before any
    training: the run's id must be known before its first fold, to find the folds an
    earlier run finished. The files are found from the import statements, so a module
    imported only once training starts is covered too.

    Returns
    -------
    dict
        ``{"files": [{"path", "module", "sha256"}, ...]}``: paths relative to the checkout
        (POSIX), sorted, the bytes of each file hashed, so that the record is the same on
        every machine and at every time.
    """
    return {"files": [{"path": rel, "module": name, "sha256": file_sha256(path)}
                      for rel, (name, path) in checkout_files(cls).items()]}


def _class_source(klass: type) -> str:
    """``inspect.getsource(klass)``, kept for as long as the text of the class's file stays
    the same (CPython before 3.13 finds a class by parsing its whole file)."""
    try:
        file = inspect.getsourcefile(klass)
    except TypeError:
        file = None
    if file is None:  # no file to read the text of: inspect says why
        with SYNTAX_TREES:
            return inspect.getsource(klass)
    # the text inspect reads: linecache's lines of the file, reloaded when it changed
    linecache.checkcache(file)
    module = sys.modules.get(klass.__module__)
    text = "".join(linecache.getlines(file, getattr(module, "__dict__", None)))
    return _source_of(klass, file, text)


@functools.lru_cache(maxsize=256)
def _source_of(klass: type, file: str, text: str) -> str:
    """``inspect.getsource(klass)`` of ``klass`` in ``file``, whose text is ``text``."""
    del file, text  # the key: the same class in the same text has the same source
    # inspect parses the class's file (ast): one syntax tree at a time (CPython 3.11)
    with SYNTAX_TREES:
        return inspect.getsource(klass)


def _module_source(module: types.ModuleType) -> str | None:
    """The module's source text; None when it cannot be read (built-in, or no file)."""
    try:
        with SYNTAX_TREES:
            return inspect.getsource(module)
    except (OSError, TypeError):
        return None


def _is_stdlib(module_name: str) -> bool:
    top = module_name.split(".", 1)[0]
    return top == "builtins" or top in sys.stdlib_module_names


def _hash_class_code(h, klass: type) -> None:
    for name in sorted(vars(klass)):
        value = vars(klass)[name]
        h.update(f"attr:{name}\0".encode())
        if isinstance(value, (staticmethod, classmethod)):
            value = value.__func__
        if isinstance(value, property):
            for accessor in (value.fget, value.fset, value.fdel):
                _hash_value_code(h, accessor)
        else:
            _hash_value_code(h, value)


def _hash_value_code(h, value: Any) -> None:
    if value is None:
        h.update(b"none")
    elif isinstance(value, types.FunctionType):
        _hash_code_object(h, value.__code__)
        h.update(content_hash({"defaults": value.__defaults__,
                               "kwdefaults": value.__kwdefaults__})["sha256"].encode())
    elif isinstance(value, types.CodeType):
        _hash_code_object(h, value)
    elif isinstance(value, (types.MemberDescriptorType, types.GetSetDescriptorType)):
        kind: type = type(value)
        h.update(kind.__name__.encode())  # slots and __dict__/__weakref__ descriptors
    elif isinstance(value, type):
        h.update(f"type:{value.__module__}.{value.__qualname__}".encode())
    else:
        h.update(content_hash({"value": value})["sha256"].encode())


def _hash_code_object(h, code: types.CodeType) -> None:
    """Byte code, names and constants (nested functions and classes recursively)."""
    h.update(code.co_code)
    h.update("\0".join((*code.co_names, *code.co_varnames, *code.co_freevars,
                        *code.co_cellvars)).encode())
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            _hash_code_object(h, const)
        else:
            h.update(_stable_const(const).encode())


def _stable_const(const: Any) -> str:
    # frozensets (``x in {"a", "b"}``) iterate in an order that depends on string hashing,
    # which differs between processes: sort their members.
    if isinstance(const, frozenset):
        return "frozenset(" + ",".join(sorted(_stable_const(c) for c in const)) + ")"
    if isinstance(const, tuple):
        return "(" + ",".join(_stable_const(c) for c in const) + ")"
    return f"{type(const).__name__}:{const!r}"


# --------------------------------------------------------------------------- values


def content_hash(values: Mapping[str, Any]) -> dict:
    """Content digest of a name -> value mapping (model parameters, training arguments).

    Values are hashed with ``joblib.hash``. A value joblib cannot hash (an open file, a lock,
    a lambda) is hashed by its parts where it has any (a container's items, an object's
    ``__dict__``), otherwise by its type and a stable description; its name goes into
    ``not_content_hashed`` so that the record says which part was not hashed by content.
    """
    notes: list[str] = []
    digests = {str(name): _value_digest(values[name], str(name), notes, 0)
               for name in sorted(values, key=str)}
    return {"sha256": json_sha256(digests), "not_content_hashed": notes}


def _value_digest(value: Any, path: str, notes: list[str], depth: int) -> str:
    import joblib

    if isinstance(value, types.FunctionType):
        # by code, not by reference: an edited function changes the digest
        h = hashlib.sha256(b"function")
        _hash_value_code(h, value)
        return "function:" + h.hexdigest()
    try:
        return "joblib:" + joblib.hash(value)
    except Exception:  # pickling can fail in any way (TypeError, PicklingError...)
        pass
    if depth < _MAX_DEPTH:
        if isinstance(value, Mapping):
            inner = {str(k): _value_digest(v, f"{path}[{k!r}]", notes, depth + 1)
                     for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
            return "mapping:" + json_sha256(inner)
        if isinstance(value, (list, tuple)):
            items = [_value_digest(v, f"{path}[{i}]", notes, depth + 1)
                     for i, v in enumerate(value)]
            return f"{type(value).__name__}:" + json_sha256(items)
        # an object of the model's own kind (not a file, lock or socket of the standard
        # library, whose state is not in its __dict__) is hashed by its attributes
        attrs = getattr(value, "__dict__", None)
        if isinstance(attrs, dict) and not isinstance(value, (type, types.ModuleType)) \
                and not _is_stdlib(type(value).__module__):
            inner = {str(k): _value_digest(v, f"{path}.{k}", notes, depth + 1)
                     for k, v in sorted(attrs.items())}
            return f"object:{_type_name(value)}:" + json_sha256(inner)
    notes.append(f"{path} ({_type_name(value)})")
    return "type:" + _describe(value)


def _type_name(value: Any) -> str:
    t = type(value)
    return f"{t.__module__}.{t.__qualname__}"


def _describe(value: Any) -> str:
    """A description that is the same in every process (no ``repr``: it may hold addresses)."""
    parts = [_type_name(value)]
    for attr in ("name", "mode"):  # open files: their path and mode
        item = getattr(value, attr, None)
        if isinstance(item, (str, int)):
            parts.append(f"{attr}={item}")
    return ";".join(parts)


def fingerprint_differences(uploaded: Any, reproduced: Any) -> list[str]:
    """Why two model fingerprints differ in code or parameters (empty when they match).

    A part missing from the upload counts as different: a submission without the digest of
    its code cannot be shown to come from the checkout.
    """
    reasons = []
    for part, (label, verb) in COMPARED_PARTS.items():
        theirs, ours = _digest(uploaded, part), _digest(reproduced, part)
        if theirs is None:
            reasons.append(f"the upload records no {label} digest (results.model.fingerprint."
                           f"{part}.sha256)")
        elif theirs != ours:
            reasons.append(f"the {label} {verb} from the upload's (sha256 {theirs[:12]}... "
                           f"uploaded, {str(ours)[:12]}... in the checkout)")
    return reasons


def _digest(fingerprint: Any, part: str) -> str | None:
    value = fingerprint.get(part) if isinstance(fingerprint, Mapping) else None
    digest = value.get("sha256") if isinstance(value, Mapping) else None
    return digest if isinstance(digest, str) and digest else None
