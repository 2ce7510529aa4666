"""Every command shown as runnable in the README and the documentation runs, and prints what
the page says it prints.

A fenced block marked ``console`` is a transcript: a line starting with ``$ `` is a command
(run with bash), the lines under it are output the command must print, in that order (other
lines may come between them; a line ``...`` stands for any lines). Blocks marked ``bash`` or
anything else are shown, not run. Each block runs in its own temporary directory holding a copy
of what a participant's clone has at its root, with the environment's ``python`` and
``evalrs`` first on the PATH.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
#: What a command may use from the clone (copied into the block's directory).
CLONE_FILES = ("submission.py", "submission", "competition.toml", "competition")
FENCE = re.compile(r"^(?P<indent> *)(?P<fence>`{3,}|~{3,})(?P<info>[^\n`]*)$")


@dataclass(frozen=True)
class Command:
    line: str
    expected: tuple[str, ...]


@dataclass(frozen=True)
class Block:
    page: Path
    lineno: int
    commands: tuple[Command, ...]

    @property
    def id(self) -> str:
        return f"{self.page.relative_to(REPO)}:{self.lineno}"


def fenced_blocks(text: str) -> list[tuple[int, str, list[str]]]:
    """(line number of the opening fence, info string, body lines) of each fenced block."""
    blocks, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, start, body = m["fence"], i + 1, []
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(fence):
            body.append(lines[i][len(m["indent"]):])
            i += 1
        blocks.append((start, m["info"].strip(), body))
        i += 1
    return blocks


def transcript(body: list[str]) -> tuple[Command, ...]:
    """The commands of a console block, each with the output lines printed under it."""
    commands: list[Command] = []
    for line in body:
        if line.startswith("$ "):
            commands.append(Command(line[2:].strip(), ()))
        elif commands:
            last = commands[-1]
            commands[-1] = Command(last.line, (*last.expected, line.rstrip()))
        elif line.strip():
            raise ValueError(f"output before the first command in a console block: {line!r}")
    return tuple(commands)


def runnable_blocks(pages: list[Path]) -> list[Block]:
    found = []
    for page in pages:
        for lineno, info, body in fenced_blocks(page.read_text(encoding="utf-8")):
            if info.split(" ")[0] == "console":
                found.append(Block(page, lineno, transcript(body)))
    return found


def missing_output(expected: tuple[str, ...], output: str) -> str | None:
    """The first expected line not printed in order (``...`` matches anything), else None."""
    printed = [line.rstrip() for line in output.splitlines()]
    position = 0
    for line in expected:
        if line.strip() in ("", "..."):
            continue
        try:
            position = printed.index(line, position) + 1
        except ValueError:
            return line
    return None


BLOCKS = runnable_blocks(PAGES)


def test_transcripts_are_parsed_as_documented():
    text = "\n".join([
        "```console", "$ echo a", "a", "...", "c", "$ true", "```",
        "```bash", "$ false", "```",
    ])
    (start, info, body), (_, other, _) = fenced_blocks(text)
    assert (start, info, other) == (1, "console", "bash")
    assert transcript(body) == (Command("echo a", ("a", "...", "c")), Command("true", ()))
    assert missing_output(("a", "...", "c"), "a\nb\nc\n") is None
    assert missing_output(("c", "a"), "a\nb\nc\n") == "a"  # order matters
    assert missing_output(("a",), "ab\n") == "a"  # whole lines, not substrings


def test_the_readme_and_the_docs_have_runnable_commands():
    pages = {block.page.relative_to(REPO).as_posix() for block in BLOCKS}
    assert "README.md" in pages
    assert any(page.startswith("docs/") for page in pages)
    assert all(block.commands for block in BLOCKS)


@pytest.mark.slow
@pytest.mark.parametrize("block", BLOCKS, ids=lambda block: block.id)
def test_runnable_commands_run_and_print_what_the_page_shows(block, tmp_path):
    for name in CLONE_FILES:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, tmp_path / name,
                            ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(source, tmp_path / name)
    bin_dir = Path(sys.executable).parent
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
           "COLUMNS": "80", "NO_COLOR": "1"}
    for command in block.commands:
        done = subprocess.run(["bash", "-c", command.line], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=300)
        output = done.stdout + done.stderr
        assert done.returncode == 0, (f"{block.id}: `{command.line}` exited with "
                                      f"{done.returncode}:\n{output[-3000:]}")
        missing = missing_output(command.expected, done.stdout)
        assert missing is None, (f"{block.id}: `{command.line}` did not print {missing!r}; "
                                 f"it printed:\n{done.stdout[-3000:]}")


def test_the_api_reference_lists_every_public_name():
    import evaluation

    index = (REPO / "docs" / "reference" / "index.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"^\| \[`(\w+)`\]", index, flags=re.MULTILINE))
    assert listed == set(evaluation.__all__) - {"__version__"}


def test_the_readme_links_to_pages_that_exist():
    # mkdocs checks the links between pages of the site; the README is not one of them
    text = (REPO / "README.md").read_text(encoding="utf-8")
    targets = re.findall(r"\]\((?!https?://)([^)#\s]+)(?:#([^)\s]+))?\)", text)
    targets += [(src, "") for src in re.findall(r'src="(?!https?://)([^"]+)"', text)]
    assert len(targets) > 20
    for path, anchor in targets:
        page = REPO / path
        assert page.is_file(), path
        if anchor:
            headings = re.findall(r"^#+ (.+)$", page.read_text(encoding="utf-8"), re.MULTILINE)
            slugs = {re.sub(r"[^\w\- ]", "", h).strip().lower().replace(" ", "-")
                     for h in headings}
            assert anchor in slugs, (path, anchor)


def test_make_test_is_described_alike_and_as_the_makefile_runs_it():
    described = {page.relative_to(REPO).as_posix(): match.group(1).strip()
                 for page in PAGES
                 for match in re.finditer(r"^make test +# (.*)$", page.read_text(), re.M)}
    assert {"README.md", "docs/participants/getting-started.md"} <= set(described)
    assert len(set(described.values())) == 1, described
    makefile = (REPO / "Makefile").read_text()
    recipe = re.search(r"^test:.*?\n((?:\t.*\n)+)", makefile, re.M | re.S)
    assert recipe is not None
    runs = recipe.group(1)
    # each part the pages name, and only those, is a step of the recipe
    parts = {"ruff": "ruff check", "mypy": "-m mypy", "the whole test suite": "-m pytest",
             "the docs site": "-m mkdocs build"}
    (text,) = set(described.values())
    for words, step in parts.items():
        assert (words in text) == (step in runs), (words, text, runs)
