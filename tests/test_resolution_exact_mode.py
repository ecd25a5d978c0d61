"""``resolution`` in the exact mode (``streaming=False``): a bad one is refused there too,
and another value than the default is warned about. Once ``resolution="x"``, 3 and
2**40 were all taken without a word by the exact mode, which keeps no histogram, while
``streaming=True`` refused the first two and the third's memory. Past ``MAX_RESOLUTION``
(2**25) float32 cannot place the cells, so 2**40 is refused in either mode too."""

from __future__ import annotations

import warnings

import pytest
import torch

from calib_metrics import CalibrationError


@pytest.mark.parametrize("value", ["x", 3, 2.0**10, True, 2])
@pytest.mark.parametrize("streaming", [False, True])
def test_a_bad_resolution_is_refused_in_either_mode(streaming: bool, value) -> None:
    with pytest.raises(ValueError, match=r"resolution must be an even integer >= 4"):
        CalibrationError(streaming=streaming, resolution=value)


@pytest.mark.parametrize("streaming", [False, True])
def test_a_resolution_past_float32_s_reach_is_refused_in_either_mode(streaming: bool) -> None:
    with pytest.raises(ValueError, match=r"at most 33,554,432 \(2\*\*25\).*streaming=False"):
        CalibrationError(streaming=streaming, resolution=2**40)


@pytest.mark.parametrize("value", [2**20, 2**25])
def test_another_resolution_without_streaming_warns_and_keeps_every_pair(value: int) -> None:
    with pytest.warns(UserWarning, match=rf"resolution={value} sets the streaming histogram"):
        metric = CalibrationError(resolution=value)
    assert not metric.streaming  # still the exact mode: the warning says what it does
    probs = torch.linspace(0.01, 0.99, 500, dtype=torch.float64)
    metric.update(probs, (probs > 0.5).long())
    assert sum(part.numel() for part in metric.probs) == 500


def test_the_warning_names_the_way_out() -> None:
    with pytest.warns(UserWarning) as said:
        CalibrationError(resolution=1024)
    (warning,) = said
    assert "pass streaming=True" in str(warning.message)
    assert warning.filename == __file__  # at the user's line


@pytest.mark.parametrize(
    "options", [{}, {"streaming": True, "resolution": 1024}, {"streaming": True}]
)
def test_resolution_that_applies_says_nothing(options: dict) -> None:
    """Also forward's exact-mode batch metric, built from a streaming metric's options."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        metric = CalibrationError(**options)
        probs = torch.linspace(0.01, 0.99, 100, dtype=torch.float64)
        metric(probs, (probs > 0.5).long())
