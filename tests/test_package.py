"""The public API: every exported name resolves; unknown names fail clearly."""

from pathlib import Path

import pytest

import evaluation


def test_every_public_name_imports():
    for name in evaluation.__all__:
        assert getattr(evaluation, name) is not None, name


def test_unknown_name_raises_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        evaluation.nope  # noqa: B018


@pytest.mark.parametrize("name", ["server", "ray", "faiss", "als", "reproduce"])
def test_each_extra_and_its_requirements_file_list_the_same_packages(name):
    import tomllib

    root = Path(__file__).resolve().parents[1]
    extra = tomllib.loads((root / "pyproject.toml").read_text())["project"][
        "optional-dependencies"][name]
    lines = (root / f"requirements-{name}.txt").read_text().splitlines()
    listed = [line.split("#")[0].strip() for line in lines]

    def norm(req: str) -> str:
        return req.replace(" ", "").replace('"', "'")

    assert sorted(norm(r) for r in extra) == sorted(norm(r) for r in listed if r)


def test_the_package_ships_its_pep_561_marker():
    """``py.typed`` is there and listed as package data: a wheel tells type checkers that the
    harness's annotations are to be used."""
    import tomllib

    root = Path(__file__).resolve().parents[1]
    config = tomllib.loads((root / "pyproject.toml").read_text())
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
