"""A participant's requirements.txt: package specifiers only; every way it could reach
another index, a URL, a path, a build or a file outside the checkout is refused by line."""

from __future__ import annotations

import pytest

from evaluation.errors import ConfigError
from evaluation.reproduce import read_requirements


def _checkout(tmp_path, text: str):
    checkout = tmp_path / "checkout"
    checkout.mkdir(exist_ok=True)
    (checkout / "requirements.txt").write_text(text)
    return checkout


def test_specifiers_with_extras_versions_markers_comments_and_includes(tmp_path):
    checkout = _checkout(tmp_path, "# the model's needs\n"
                                   "numpy>=2.0  # arrays\n"
                                   "\n"
                                   "Pandas[performance] >= 3.0, <4\n"
                                   "torch==2.3; platform_system == 'Linux'\n"
                                   "scikit-learn \\\n"
                                   "  ==1.5.2\n"
                                   "-r more/extra.txt\n"
                                   "-c constraints.txt\n")
    (checkout / "more").mkdir()
    (checkout / "more" / "extra.txt").write_text("gensim>=4.3\n")
    (checkout / "constraints.txt").write_text("scipy<2\n")
    found = read_requirements(checkout / "requirements.txt", checkout)
    assert found.requirements == ("numpy>=2.0", "Pandas[performance]<4,>=3.0",
                                  'torch==2.3; platform_system == "Linux"',
                                  "scikit-learn==1.5.2", "gensim>=4.3")
    assert found.constraints == ("scipy<2",)


@pytest.mark.parametrize(("line", "rule"), [
    ("--index-url https://evil.example/simple", "index options (--index-url)"),
    ("-i https://evil.example/simple", "index options (-i)"),
    ("--extra-index-url=https://evil.example/simple", "index options (--extra-index-url)"),
    ("--trusted-host evil.example", "index options (--trusted-host)"),
    ("-f https://evil.example/wheels", "index options (-f)"),
    ("--find-links /tmp/wheels", "index options (--find-links)"),
    ("numpy @ https://evil.example/numpy.whl", "is a URL or a path"),
    ("evil @ file:///root/evil.whl", "is a URL or a path"),
    ("https://evil.example/pkg.tar.gz", "is a URL or a path"),
    ("./vendored/pkg", "is a URL or a path"),
    ("/root/pkg.whl", "is a URL or a path"),
    ("-e .", "an editable install (-e)"),
    ("--editable git+https://evil.example/x", "an editable install (--editable)"),
    ("-r /etc/passwd", "leads outside the checkout"),
    ("-r ../outside.txt", "leads outside the checkout"),
    ("-c ../../constraints.txt", "leads outside the checkout"),
    ("-r https://evil.example/r.txt", "must name a file inside the checkout"),
    ("--no-binary :all:", "index options (--no-binary)"),
    ("numpy===", "is not a package specifier"),
])
def test_every_other_line_is_refused_naming_file_line_rule_and_fix(tmp_path, line, rule):
    (tmp_path / "outside.txt").write_text("numpy\n")
    checkout = _checkout(tmp_path, f"numpy>=2\n# comment\n{line}\n")
    with pytest.raises(ConfigError) as caught:
        read_requirements(checkout / "requirements.txt", checkout)
    message = str(caught.value)
    assert message.startswith(f"{checkout / 'requirements.txt'}:3: ")
    assert rule in message and "Fix: " in message


def test_a_symlinked_include_leading_outside_is_refused(tmp_path):
    (tmp_path / "secret.txt").write_text("numpy\n")
    checkout = _checkout(tmp_path, "-r inner.txt\n")
    (checkout / "inner.txt").symlink_to(tmp_path / "secret.txt")
    with pytest.raises(ConfigError, match="requirements.txt:1: -r inner.txt leads outside"):
        read_requirements(checkout / "requirements.txt", checkout)


def test_a_bad_line_in_an_included_file_names_that_file(tmp_path):
    checkout = _checkout(tmp_path, "numpy\n-r extra.txt\n")
    (checkout / "extra.txt").write_text("pandas\n\n--extra-index-url https://e.example\n")
    with pytest.raises(ConfigError, match=r"extra\.txt:3: index options"):
        read_requirements(checkout / "requirements.txt", checkout)


def test_the_environment_is_never_built_from_a_refused_file(tmp_path, monkeypatch):
    from evaluation.reproduce import _env, prepare_env

    ran = []
    monkeypatch.setattr(_env, "_step", lambda command, *a, **k: ran.append(command))
    checkout = _checkout(tmp_path, "numpy\n--extra-index-url https://evil.example/simple\n")
    with pytest.raises(ConfigError, match=r"requirements\.txt:2: index options"):
        prepare_env(checkout, tmp_path / "cache", log=lambda line: None,
                    log_path=tmp_path / "build.log")
    assert ran == []  # refused before any installer ran


def test_the_installer_gets_the_specifiers_written_anew(tmp_path):
    from evaluation.reproduce._env import checkout_requirements

    checkout = _checkout(tmp_path, "numpy >= 2  # arrays\n-c pins.txt\n")
    (checkout / "pins.txt").write_text("numpy<3\n")
    assert checkout_requirements(checkout) == b"numpy>=2\n# constraints\nnumpy<3\n"
