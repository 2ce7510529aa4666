"""The public API (every exported name resolves; unknown names fail clearly) and the
package's declaration: its dependencies and extras in pyproject.toml, the requirement files a
tool reads, what may be committed. Building and installing the wheel: test_wheel.py."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement

import evaluation

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[1]
#: The line that ends requirements.txt's copy of the harness's dependencies.
HARNESS_BLOCK_END = "# end of the harness's dependencies"


def test_every_public_name_imports():
    for name in evaluation.__all__:
        assert getattr(evaluation, name) is not None, name


def test_unknown_name_raises_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        evaluation.nope  # noqa: B018


def _pyproject() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))


def _normalised(requirement: str) -> str:
    """A requirement as packaging writes it: the same one in any spelling compares equal."""
    return str(Requirement(requirement))


def harness_block(text: str) -> list[str]:
    """The requirements of requirements.txt's first block: the lines before the end marker."""
    block = text.split(HARNESS_BLOCK_END)[0]
    lines = (line.split("#")[0].strip() for line in block.splitlines())
    return [line for line in lines if line]


def test_requirements_txt_repeats_the_harness_dependencies_of_pyproject():
    """The participant's requirements.txt starts with a copy of [project] dependencies (their
    one declaration); its end marker is there, so a participant adds below it."""
    declared = _pyproject()["project"]["dependencies"]
    text = (REPO / "requirements.txt").read_text(encoding="utf-8")
    assert HARNESS_BLOCK_END in text, f"requirements.txt lost its line {HARNESS_BLOCK_END!r}"
    copied = harness_block(text)
    expected = "\n".join(declared)
    assert [_normalised(r) for r in copied] == [_normalised(r) for r in declared], (
        "requirements.txt's first block differs from [project] dependencies in "
        f"pyproject.toml (where they are declared). Fix: make the block read\n{expected}")


def test_the_harness_block_reader_sees_a_missing_or_extra_line():
    text = "# comment\nnumpy>=2.0  # arrays\npandas>=3\n" + HARNESS_BLOCK_END + "\nimplicit\n"
    assert harness_block(text) == ["numpy>=2.0", "pandas>=3"]
    assert [_normalised(r) for r in harness_block(text)] != [_normalised("numpy>=2.0")]


def test_reclist_is_no_dependency_and_is_installed_without_its_own():
    """reclist==2.1.0 pins libraries that do not import under NumPy 2: it is installed apart,
    with --no-deps, from the one file that names it."""
    config = _pyproject()["project"]
    everything = config["dependencies"] + [r for extra in config["optional-dependencies"].values()
                                           for r in extra]
    assert not [r for r in everything if Requirement(r).name == "reclist"]
    pinned = harness_block((REPO / "requirements-reclist.txt").read_text(encoding="utf-8"))
    assert pinned == ["reclist==2.1.0"]
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    assert "--no-deps -r requirements-reclist.txt" in makefile


def test_only_the_files_a_tool_reads_are_requirement_files():
    # the extras are declared in pyproject.toml; requirements.txt is the participant's
    # environment (submission.py's, a reproduction's), requirements-reclist.txt the --no-deps pin
    found = sorted(path.name for path in REPO.glob("requirements*.txt"))
    assert found == ["requirements-reclist.txt", "requirements.txt"]


@pytest.mark.parametrize("extra", ["server", "server-test", "reproduce", "ray", "faiss", "als",
                                   "docs", "dev"])
def test_each_extra_is_declared_and_installed_by_a_make_target(extra):
    config = _pyproject()["project"]
    assert config["optional-dependencies"][extra], extra
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    installs = re.findall(r'-e "\.\[([\w,-]+)\]"', makefile)
    assert extra in {name for found in installs for name in found.split(",")}, (
        f"no Makefile recipe installs the {extra!r} extra")
    # `make test` installs every extra but dev's own in the harness's step, at once
    together = re.search(r"^TEST_EXTRAS := (.*)$", makefile, re.MULTILINE)
    assert together is not None and (extra == "dev") != (extra in together.group(1).split()), (
        f"TEST_EXTRAS in the Makefile must list {extra!r} (make test installs it)")


def test_make_test_installs_every_optional_part():
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    # the rule's line and its continuation lines (ending in a backslash)
    test_rule = re.search(r"^test: ((?:.*\\\n)*.*)$", makefile, re.MULTILINE)
    assert test_rule is not None
    needs = set(re.findall(r"\$\((\w+)_STAMP\)", test_rule.group(1)))
    assert needs == {"TORCH", "SERVER", "RAY", "FAISS", "ALS", "BROWSER", "POSTGRES", "SANDBOX",
                     "DOCS"}
    for target in ("server", "ray", "faiss", "als", "torch", "docs-deps", "browser", "postgres",
                   "sandbox"):
        assert re.search(rf"^{target}: \$\(\w+_STAMP\)$", makefile, re.MULTILINE), target


def test_no_tracked_file_is_over_one_megabyte():
    """Nothing large is committed (a wheel, a dataset, a site build): the clone stays small."""
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("not a git checkout")
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True,
                            check=True).stdout.decode().split("\0")
    sizes = {name: (REPO / name).stat().st_size for name in listed
             if name and (REPO / name).is_file()}
    assert len(sizes) > 100
    large = {name: size for name, size in sizes.items() if size > 2**20}
    assert not large, f"tracked files over 1 MiB (git rm them; keep data out of git): {large}"


@pytest.mark.parametrize("path", ["dist/evalrs_harness-0.1.0-py3-none-any.whl",
                                  "uv-0.13.9-py3-none-any.whl", "build/lib/evaluation/x.py",
                                  "evalrs_harness.egg-info/PKG-INFO", "site/index.html",
                                  "dist/evalrs_harness-0.1.0.tar.gz"])
def test_build_artefacts_cannot_be_committed(path):
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("not a git checkout")
    ignored = subprocess.run(["git", "check-ignore", "-q", "--no-index", path], cwd=REPO)
    assert ignored.returncode == 0, f"{path} is not ignored by .gitignore"


def test_the_package_ships_its_pep_561_marker():
    """``py.typed`` is there and listed as package data: a wheel tells type checkers that the
    harness's annotations are to be used."""
    root = REPO
    config = _pyproject()
    assert "py.typed" in config["tool"]["setuptools"]["package-data"]["evaluation"]
    assert (root / "evaluation" / "py.typed").is_file()


def test_the_als_recipe_imports_from_a_script_outside_the_repository(tmp_path):
    # the documented way: the repository's root on the module path (examples/ is a folder of
    # the repository, not of the installed package); implicit is imported only to train
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    script = tmp_path / "my_script.py"
    script.write_text("import inspect\nfrom examples.als_model import ALSModel\n"
                      "print(sorted(inspect.signature(ALSModel).parameters))\n")
    env = {**os.environ, "PYTHONPATH": str(root)}
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    # named parameters only: a --param typo is caught
    assert done.stdout.split() == ["['alpha',", "'factors',", "'items',", "'iterations',",
                                   "'regularization',", "'seed',", "'top_k']"]
    without = subprocess.run([sys.executable, str(script)], cwd=tmp_path,
                             env={k: v for k, v in env.items() if k != "PYTHONPATH"},
                             capture_output=True, text=True, timeout=120)
    assert without.returncode != 0 and "No module named 'examples'" in without.stderr
