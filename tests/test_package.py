"""The public API: every exported name resolves; unknown names fail clearly."""

import pytest

import evaluation


def test_every_public_name_imports():
    for name in evaluation.__all__:
        assert getattr(evaluation, name) is not None, name


def test_unknown_name_raises_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        evaluation.nope  # noqa: B018
