"""DESIGN.md: every public function and class has a docstring with a runnable example
(the suite runs them: pyproject's ``--doctest-modules`` over ``calib_metrics``). The
result types of :mod:`calib_metrics.functional` had none."""

from __future__ import annotations

import doctest

import pytest

import calib_metrics.functional as F


@pytest.mark.parametrize("name", F.__all__)
def test_every_public_name_of_functional_has_a_runnable_example(name) -> None:
    docstring = getattr(F, name).__doc__ or ""
    assert "Example" in docstring, f"{name}'s docstring has no Example section"
    assert doctest.DocTestParser().get_examples(docstring), f"{name}'s example runs nothing"
