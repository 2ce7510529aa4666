"""The participant's ``requirements.txt``, read as package specifiers only.

A requirements file is a pip command line in disguise: ``--index-url`` sends the organizer's
installer to a foreign index, ``pkg @ https://...`` or a path installs whatever is there, and
``-e`` runs a build. In a reproduction the organizer's index is the only source, so a line may
hold only a specifier (name, extras, version, environment markers), a comment, or a ``-r`` /
``-c`` of another file inside the checkout (read by the same rules). Anything else is refused
with the file, the line number, the rule and the fix. The environment is then built from the
specifiers written anew by the harness, never from the participant's file itself.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement

from evaluation.errors import ConfigError

#: The options that name another requirements or constraints file.
_INCLUDES = {"-r": "requirements", "--requirement": "requirements",
             "-c": "constraints", "--constraint": "constraints"}
#: The options refused, with the rule each breaks.
_INDEX_OPTIONS = ("-i", "--index-url", "--extra-index-url", "--trusted-host", "-f",
                  "--find-links", "--no-index", "--pre", "--prefer-binary", "--only-binary",
                  "--no-binary", "--use-feature", "--config-settings", "--global-option")
#: How deep ``-r`` files may nest.
_MAX_DEPTH = 8


@dataclass(frozen=True)
class Specifiers:
    """What a checkout's requirements ask for.

    Attributes
    ----------
    requirements : tuple of str
        The package specifiers, normalised (``packaging``'s string form), in file order.
    constraints : tuple of str
        The specifiers of ``-c`` files.
    """

    requirements: tuple[str, ...] = ()
    constraints: tuple[str, ...] = ()


def _refuse(path: Path, number: int, rule: str, fix: str) -> ConfigError:
    return ConfigError(f"{path}:{number}: {rule}. Fix: {fix}.")


def read_requirements(path: str | os.PathLike, checkout: str | os.PathLike) -> Specifiers:
    """The specifiers of the requirements file ``path`` of ``checkout``.

    Raises
    ------
    ConfigError
        Naming the file, the line, the rule broken and the fix, for an index option, a URL,
        a path, an editable install, an include leading outside the checkout or a line that
        is not a specifier.
    """
    root = Path(checkout).resolve()
    requirements: list[str] = []
    constraints: list[str] = []
    _read(Path(path), root, requirements, constraints, into=requirements, depth=0)
    return Specifiers(tuple(requirements), tuple(constraints))


def _lines(path: Path) -> list[tuple[int, str]]:
    """The logical lines of ``path`` (continuations joined, comments dropped) by number."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot be read as UTF-8 text ({type(exc).__name__}); "
                          f"give a requirements file of package specifiers.") from None
    lines, pending, start = [], "", 0
    for number, raw in enumerate(text.splitlines(), start=1):
        if not pending:
            start = number
        line = raw
        if line.lstrip().startswith("#"):
            line = ""
        elif " #" in line or "\t#" in line:
            line = line[:min(i for i in (line.find(" #"), line.find("\t#")) if i >= 0)]
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line = (pending + line).strip()
        pending = ""
        if line:
            lines.append((start, line))
    return lines


def _read(path: Path, root: Path, requirements: list[str], constraints: list[str], *,
          into: list[str], depth: int) -> None:
    for number, line in _lines(path):
        if line.startswith("-"):
            _option(path, number, line, root, requirements, constraints, depth)
            continue
        into.append(_specifier(path, number, line))


def _option(path: Path, number: int, line: str, root: Path, requirements: list[str],
            constraints: list[str], depth: int) -> None:
    """An option line: an include inside the checkout, or a refusal."""
    name, _, value = line.replace("=", " ", 1).partition(" ")
    if name.startswith("-r") and name != "-r" and not name.startswith("--"):
        name, value = "-r", name[2:] + " " + value
    elif name.startswith("-c") and name != "-c" and not name.startswith("--"):
        name, value = "-c", name[2:] + " " + value
    value = value.strip()
    if name in _INCLUDES:
        target = _inside(path, number, value, root, name)
        if depth >= _MAX_DEPTH:
            raise _refuse(path, number, f"{name} files nest more than {_MAX_DEPTH} deep",
                          "list the packages in fewer files")
        into = requirements if _INCLUDES[name] == "requirements" else constraints
        _read(target, root, requirements, constraints, into=into, depth=depth + 1)
        return
    if name in ("-e", "--editable"):
        raise _refuse(path, number, f"an editable install ({name}) runs a build of the "
                                    f"participant's code while the environment is made",
                      "put the code in the checkout (it is importable from its folder) or "
                      "name a released package by its version")
    if name.split("=")[0] in _INDEX_OPTIONS:
        raise _refuse(path, number, f"index options ({name.split('=')[0]}) are not allowed: "
                                    f"packages come from the organizer's index only",
                      "remove the line; name packages by specifier (e.g. numpy==2.3.1)")
    raise _refuse(path, number, f"the option {name!r} is not allowed: a line holds a package "
                                f"specifier only",
                  "remove the option; name packages by specifier (e.g. numpy==2.3.1)")


def _inside(path: Path, number: int, value: str, root: Path, option: str) -> Path:
    """The file an include names, when it is a file inside the checkout."""
    if not value or "://" in value:
        raise _refuse(path, number, f"{option} must name a file inside the checkout "
                                    f"(got {value!r})",
                      "give a path relative to this file, inside the checkout")
    target = (path.parent / value).resolve()
    if not target.is_relative_to(root):
        raise _refuse(path, number, f"{option} {value} leads outside the checkout "
                                    f"({target})",
                      "keep every requirements file inside the checkout")
    if not target.is_file():
        raise _refuse(path, number, f"{option} {value}: no such file in the checkout",
                      "give the path of a requirements file of the checkout")
    return target


def _specifier(path: Path, number: int, line: str) -> str:
    """The normalised specifier of ``line``; refused when it is a URL, a path or unreadable."""
    if "://" in line or line.startswith((".", "/", "~")) or "\\" in line:
        raise _refuse(path, number, f"{line!r} is a URL or a path: packages come from the "
                                    f"organizer's index only",
                      "name the package by its version (e.g. numpy==2.3.1); code of your own "
                      "goes in the checkout")
    try:
        requirement = Requirement(line)
    except InvalidRequirement as exc:
        raise _refuse(path, number, f"{line!r} is not a package specifier ({exc})",
                      "write name[extras]<version-specifiers>; markers, e.g. "
                      "'numpy>=2; python_version >= \"3.11\"'") from None
    if requirement.url:
        raise _refuse(path, number, f"{requirement.name} @ {requirement.url} is a direct "
                                    f"reference: packages come from the organizer's index only",
                      f"name the package by its version (e.g. {requirement.name}==1.2.3)")
    return str(requirement)
