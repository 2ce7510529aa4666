"""NumPy's huge-page advice is switched off around the harness's own work only where it stalls."""

from __future__ import annotations

import numpy as np
import pytest

from evaluation._util import hugepages


@pytest.mark.parametrize("text,stalls", [
    ("always defer defer+madvise [madvise] never\n", True),
    ("always defer [defer+madvise] madvise never\n", True),
    ("[always] defer defer+madvise madvise never\n", False),
    ("always defer defer+madvise madvise [never]\n", False),
    ("", False),
])
def test_the_kernels_defrag_setting_decides(tmp_path, text, stalls):
    setting = tmp_path / "defrag"
    setting.write_text(text)
    assert hugepages.advice_stalls(setting) is stalls
    assert hugepages.advice_stalls(tmp_path / "missing") is False  # not Linux, no THP


@pytest.fixture
def switch():
    """NumPy's (getter, setter) of its huge-page advice, put back as it was after the test."""
    found = hugepages._numpy_switch()
    # a private NumPy function: pinned here, so that a NumPy without it is noticed (the
    # harness then leaves the advice alone)
    assert found is not None
    get, set_ = found
    before = get()
    yield get, set_
    set_(before)


def test_numpy_still_has_the_switch_the_harness_turns(switch):
    get, set_ = switch
    before = get()
    set_(not before)
    assert bool(get()) is (not before)


@pytest.mark.parametrize("initially", [True, False])
def test_the_advice_is_off_inside_and_restored_after(monkeypatch, switch, initially):
    get, set_ = switch
    monkeypatch.setattr(hugepages, "_STALLS", True)
    set_(initially)
    with hugepages.no_hugepage_advice():
        assert get() is False
        np.ones(1 << 20)  # allocations work as usual
    assert bool(get()) is initially
    with pytest.raises(RuntimeError), hugepages.no_hugepage_advice():
        raise RuntimeError("a failing block")
    assert bool(get()) is initially  # restored after an error too


def test_nothing_changes_where_the_advice_does_not_stall(monkeypatch, switch):
    get, set_ = switch
    monkeypatch.setattr(hugepages, "_STALLS", False)
    set_(True)
    with hugepages.no_hugepage_advice():
        assert get() is True
