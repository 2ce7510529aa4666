"""The harness's own warnings are shown in its words, once, without a source line."""

from __future__ import annotations

import warnings

from evaluation.cli import guarded
from evaluation.errors import PredictionWarning, RunWarning


def _warn_twice() -> int:
    # the same message from two lines: a fold's warning repeated by the next fold
    warnings.warn("fold 0 is recomputed", RunWarning, stacklevel=1)
    warnings.warn("fold 0 is recomputed", RunWarning, stacklevel=1)
    warnings.warn(PredictionWarning("3 lists are short"), stacklevel=1)
    return 0


def test_harness_warnings_are_plain_lines_shown_once(capsys):
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        assert guarded(_warn_twice) == 0
    err = capsys.readouterr().err
    assert err.splitlines() == ["warning: fold 0 is recomputed", "warning: 3 lists are short"]


def test_other_warnings_go_to_the_usual_handler(monkeypatch, capsys):
    passed = []
    monkeypatch.setattr(warnings, "showwarning",
                        lambda message, category, *rest, **kw: passed.append(category))

    def run() -> int:
        warnings.warn("a library's own warning", DeprecationWarning, stacklevel=1)
        return 0

    with warnings.catch_warnings():
        warnings.simplefilter("always")
        assert guarded(run) == 0
    assert passed == [DeprecationWarning] and capsys.readouterr().err == ""


def test_the_hook_is_removed_after_the_run():
    before = warnings.showwarning
    guarded(lambda: 0)
    assert warnings.showwarning is before
