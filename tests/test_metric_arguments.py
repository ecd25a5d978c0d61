"""Constructor flags of the metrics are booleans: a string or number is refused by name
(once ``streaming="no"`` — truthy — silently built a streaming metric)."""

from __future__ import annotations

import pytest

from calib_metrics import CalibrationError


@pytest.mark.parametrize("value", ["no", 0, 1, None])
def test_streaming_must_be_a_bool(value) -> None:
    with pytest.raises(ValueError, match="streaming must be True or False"):
        CalibrationError(streaming=value)


def test_streaming_bools_are_accepted() -> None:
    assert CalibrationError(streaming=True).streaming is True
    assert CalibrationError(streaming=False).streaming is False
