"""A run's settings given on a command line: the model's parameters and a custom RecList.

``submission.py --param NAME=VALUE --params-file FILE --reclist module:Class`` says with
options what the Python API says with arguments: ``MyModel(**params)`` and
``evaluate(reclist_cls=...)``. Values are TOML values (``64``, ``0.05``, ``true``, ``"text"``,
``[1, 2]``); a bare word (``cosine``) is a string.
"""

from __future__ import annotations

import importlib
import inspect
import json
import math
import os
import re
import sys
import types
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from evaluation.errors import ConfigError
from evaluation.runner._reclist import reclist_base

# A value that is not TOML but reads as a word (a name, a path, a URL) is taken as a string:
# ``--param metric=cosine`` needs no shell quoting. Anything else that is not TOML is an error
# rather than a string, so that ``--param layers=[64,32`` is not silently the text "[64,32".
_BARE_WORD = re.compile(r"^[A-Za-z_][A-Za-z0-9_.:/@+-]*$")


def _toml() -> types.ModuleType:
    """The TOML parser: the standard library's (Python >= 3.11) or tomli."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # Python 3.10
        try:
            import tomli as tomllib
        except ModuleNotFoundError:
            raise ConfigError("TOML values and files need Python >= 3.11 (tomllib) or the "
                              "tomli package: pip install tomli") from None
    return tomllib


def parse_param(text: str) -> tuple[str, Any]:
    """One ``NAME=VALUE`` option as ``(name, value)``.

    Parameters
    ----------
    text : str
        ``NAME=VALUE``: NAME a Python identifier, VALUE a TOML value (int, float, bool,
        string, array, inline table) or a bare word (a string).

    Returns
    -------
    tuple of (str, object)

    Raises
    ------
    ConfigError
        Naming the option, when NAME is not an identifier or VALUE is neither TOML nor a word.
    """
    name, sep, raw = text.partition("=")
    name = name.strip()
    if not sep or not name.isidentifier():
        raise ConfigError(f"--param {text!r}: expected NAME=VALUE with NAME a Python "
                          f"identifier (a keyword argument of the model's constructor), e.g. "
                          f"--param factors=64.")
    raw = raw.strip()
    tomllib = _toml()
    try:
        return name, tomllib.loads(f"value = {raw}")["value"]
    except tomllib.TOMLDecodeError:
        pass
    if _BARE_WORD.match(raw):
        return name, raw
    raise ConfigError(f"--param {text!r}: {raw!r} is not a value: write a number (64, 0.05), "
                      f"true/false, a word or a quoted string ('\"two words\"'), or a list "
                      f"([64, 32]).")


def load_params_file(path: str | os.PathLike) -> dict[str, Any]:
    """The parameters in a TOML or JSON file (by its suffix: ``.json`` is JSON, else TOML).

    Raises
    ------
    ConfigError
        Naming the file, when it cannot be read or parsed, is not a table/object at the top,
        or has a key that is not a Python identifier.
    """
    shown = os.fspath(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"--params-file {shown!r} does not exist. Pass a TOML or JSON file "
                          f"of the model's parameters (e.g. factors = 64).") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"--params-file {shown!r} cannot be read as UTF-8 text "
                          f"({getattr(exc, 'strerror', None) or exc}).") from None
    if Path(path).suffix.lower() == ".json":
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise ConfigError(f"--params-file {shown!r} is not valid JSON: {exc}. Fix the "
                              f"syntax there.") from None
    else:
        tomllib = _toml()
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"--params-file {shown!r} is not valid TOML: {exc}. Fix the "
                              f"syntax there (or name a JSON file *.json).") from None
    if not isinstance(data, dict):
        raise ConfigError(f"--params-file {shown!r} must hold an object of NAME: VALUE pairs "
                          f"at the top; got a {type(data).__name__}.")
    bad = [k for k in data if not k.isidentifier()]
    if bad:
        raise ConfigError(f"--params-file {shown!r}: key {bad[0]!r} is not a Python identifier "
                          f"(a keyword argument of the model's constructor); rename it.")
    return data


def collect_params(pairs: Iterable[str] = (), file: str | os.PathLike | None = None) -> dict:
    """The model parameters of ``--params-file`` and ``--param`` options (these win).

    Raises
    ------
    ConfigError
        On a bad option or file, or a name given twice with ``--param``.
    """
    params = dict(load_params_file(file)) if file is not None else {}
    given: set[str] = set()
    for text in pairs:
        name, value = parse_param(text)
        if name in given:
            raise ConfigError(f"--param {name}=... is given twice; give each parameter once.")
        given.add(name)
        params[name] = value
    return params


#: The constructor's arguments that the harness passes itself: not the model's parameters.
HARNESS_ARGS = ("items", "top_k")
#: Longest text, and most elements of a list or mapping, recorded as a parameter's value.
_MAX_TEXT, _MAX_ITEMS = 200, 50


def model_params(model: object) -> dict:
    """The parameters ``model`` was built with, as far as it shows them: each argument of its
    class's constructor (but ``HARNESS_ARGS``) that it keeps as an attribute of the same name,
    with a plain JSON value (a number, text, true/false, null, or a short list or mapping of
    those). A run of the Python API (or of a baseline) records them, so that compare and the
    report show its parameters as they show those of ``submission.py --param``.
    """
    try:
        signature = inspect.signature(type(model))
    except (TypeError, ValueError):
        return {}
    params = {}
    for name, parameter in signature.parameters.items():
        if parameter.kind not in (inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                  inspect.Parameter.KEYWORD_ONLY) or name in HARNESS_ARGS:
            continue
        try:
            value = _plain(getattr(model, name))
        except (AttributeError, ValueError):  # not kept under its name, or not plain JSON
            continue
        params[name] = value
    return params


def _plain(value: Any, depth: int = 0) -> Any:
    """``value`` as plain JSON (NumPy scalars as numbers); ``ValueError`` when it is not."""
    item = getattr(value, "item", None)
    if callable(item) and type(value).__module__ == "numpy" and getattr(value, "ndim", 1) == 0:
        value = item()
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, float) and math.isfinite(value):
        return value
    if isinstance(value, str) and len(value) <= _MAX_TEXT:
        return value
    if depth < 2 and isinstance(value, (list, tuple)) and len(value) <= _MAX_ITEMS:
        return [_plain(v, depth + 1) for v in value]
    if depth < 2 and isinstance(value, Mapping) and len(value) <= _MAX_ITEMS \
            and all(isinstance(k, str) for k in value):
        return {k: _plain(v, depth + 1) for k, v in value.items()}
    raise ValueError(f"not a plain JSON value: {type(value).__name__}")


def check_model_params(model_class: type, params: Mapping[str, Any],
                       reserved: Iterable[str] = ()) -> None:
    """Nothing; a ``ConfigError`` when ``model_class(**params)`` cannot take ``params``.

    Parameters
    ----------
    model_class : type
        The model's class; its constructor's signature is read with ``inspect.signature``.
    params : mapping
        The parameters from the command line.
    reserved : iterable of str
        Keyword arguments the harness passes itself (``items``, ``top_k``).
    """
    taken = sorted(set(params) & set(reserved))
    if taken:
        raise ConfigError(f"--param {taken[0]}: the harness sets {taken[0]!r} itself; choose "
                          f"another name.")
    try:
        signature = inspect.signature(model_class)
    except (TypeError, ValueError):  # no signature to read: the constructor decides
        return
    accepted = signature.parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in accepted.values()):
        return
    names = [n for n, p in accepted.items()
             if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD,
                           inspect.Parameter.KEYWORD_ONLY) and n not in reserved]
    takes = ", ".join(names) or "none besides the harness's"
    for name in params:
        if name not in names:
            raise ConfigError(f"--param {name}: {model_class.__name__}() has no parameter "
                              f"{name!r} (its parameters: {takes}). Fix the name, or add "
                              f"{name}=... to {model_class.__name__}.__init__.")


def import_reclist(spec: str) -> type:
    """The RecList class named ``module:Class`` (the module importable from ``sys.path``).

    Raises
    ------
    ConfigError
        When ``spec`` is not ``module:Class``, the module cannot be imported, has no such
        class, or the class is not a subclass of ``EvalRSRecList``.
    """
    module_name, sep, class_name = spec.partition(":")
    if not sep or not all(p.isidentifier() for p in module_name.split(".")) \
            or not all(p.isidentifier() for p in class_name.split(".")):
        raise ConfigError(f"--reclist {spec!r}: expected module:Class, e.g. --reclist "
                          f"myreclist:MyRecList (myreclist.py next to submission.py).")
    try:
        # importlib: the participant's module, named on the command line (not the harness's)
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and module_name.startswith(exc.name):
            raise ConfigError(f"--reclist {spec!r}: no module {module_name!r} (looked in the "
                              f"submission's folder and the installed packages).") from None
        raise
    found: Any = module
    for part in class_name.split("."):
        found = getattr(found, part, None)
    if found is None:
        raise ConfigError(f"--reclist {spec!r}: module {module_name} has no {class_name!r}; "
                          f"check the class name.")
    # reclist, which EvalRSRecList subclasses, is loaded only for a custom RecList (whose
    # module imported it already)
    if not (isinstance(found, type) and issubclass(found, reclist_base())):
        raise ConfigError(f"--reclist {spec!r}: {class_name} is not a subclass of "
                          f"evaluation.EvalRSRecList (which keeps the leaderboard tests); "
                          f"subclass it and add your @rec_test methods.")
    return found
