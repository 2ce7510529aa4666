"""The shared parameter checks of ``evaluation._util.validation``: rules, bounds, message."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from evaluation._util.validation import (
    check_choice,
    check_fraction,
    check_int,
    check_k,
    check_number,
    check_seed,
)
from evaluation.errors import ConfigError


def message(exc_info) -> str:
    return str(exc_info.value)


def test_message_format_names_parameter_owner_rule_and_value():
    with pytest.raises(ConfigError) as exc:
        check_k(0, owner="score")
    assert message(exc) == ("The 'k' parameter of score must be an int in the range [1, inf). "
                            "Got 0 instead.")
    with pytest.raises(ConfigError) as exc:
        check_int("n", -1, minimum=0)
    assert message(exc) == "The 'n' parameter must be an int in the range [0, inf). Got -1 instead."


@pytest.mark.parametrize("value", [1, 5, 10, np.int64(7), np.uint8(1)])
def test_check_int_accepts_integers_in_range_and_returns_int(value):
    got = check_int("n", value, minimum=1, maximum=10)
    assert got == int(value) and type(got) is int


@pytest.mark.parametrize("value", [0, 11, True, False, np.bool_(True), 1.0, "3", None, [1]])
def test_check_int_refuses(value):
    with pytest.raises(ConfigError, match=re.escape("an int in the range [1, 10]. Got ")):
        check_int("n", value, minimum=1, maximum=10)


def test_check_int_open_bounds():
    assert check_int("n", -(10**30)) == -(10**30)
    with pytest.raises(ConfigError, match=re.escape("in the range (-inf, 3]")):
        check_int("n", 4, maximum=3)


@pytest.mark.parametrize("value", [1, 2**40, np.int32(3)])
def test_check_k(value):
    assert check_k(value) == int(value)


@pytest.mark.parametrize("value", [0, -1, True, 2.0, None])
def test_check_k_refuses_with_its_name(value):
    with pytest.raises(ConfigError, match=r"^The 'top_k' parameter of M must be an int"):
        check_k(value, name="top_k", owner="M")


def test_check_number_bounds_open_and_closed():
    assert check_number("x", 0, low=0.0) == 0.0
    assert type(check_number("x", np.float32(0.5))) is float
    assert check_number("x", math.inf) == math.inf  # open sides accept what they reach
    with pytest.raises(ConfigError, match=re.escape("a number in the range (0.0, 1.0]")):
        check_number("x", 0.0, low=0.0, high=1.0, low_open=True)
    with pytest.raises(ConfigError, match=re.escape("a number in the range [0.0, 1.0)")):
        check_number("x", 1.0, low=0.0, high=1.0, high_open=True)
    assert check_number("x", 1.0, low=0.0, high=1.0) == 1.0


@pytest.mark.parametrize("value", [math.nan, True, np.bool_(False), "1", None, 1j])
def test_check_number_refuses(value):
    with pytest.raises(ConfigError, match=r"'x' parameter must be a number"):
        check_number("x", value)


@pytest.mark.parametrize("value,ok", [(1, True), (1.0, True), (0.25, True), (1e-300, True),
                                      (0, False), (0.0, False), (1.0000001, False),
                                      (-0.5, False), (True, False), (math.nan, False)])
def test_check_fraction(value, ok):
    if ok:
        assert check_fraction("frac", value) == float(value)
    else:
        with pytest.raises(ConfigError, match=re.escape(
                "The 'frac' parameter must be a number in the range (0.0, 1.0]. Got ")):
            check_fraction("frac", value)


def test_check_choice():
    assert check_choice("mode", "a", ("a", "b")) == "a"
    with pytest.raises(ConfigError) as exc:
        check_choice("mode", "c", ("a", "b"), owner="f")
    assert message(exc) == "The 'mode' parameter of f must be one of ['a', 'b']. Got 'c' instead."
    with pytest.raises(ConfigError, match="must be one of"):
        check_choice("mode", ["a"], ("a", "b"))  # unhashable: simply not a choice


@pytest.mark.parametrize("value,ok", [(0, True), (2**32 - 1, True), (np.uint32(5), True),
                                      (-1, False), (2**32, False), (True, False),
                                      (1.0, False)])
def test_check_seed(value, ok):
    if ok:
        assert check_seed("seed", value) == int(value)
    else:
        with pytest.raises(ConfigError, match=re.escape(
                "The 'seed' parameter must be an int in the range [0, 4294967295]. Got ")):
            check_seed("seed", value)
