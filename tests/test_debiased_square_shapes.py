"""``debiased_square`` (public in ``functional.intervals``) works in place on its own
temporaries only where the result fits them: a [T] gap with [S, T] draws' frequencies had
raised "output with shape [2] doesn't match the broadcast shape", and a float32 gap with
float64 frequencies had come back float32."""

from __future__ import annotations

import torch

from calib_metrics.functional.intervals import debiased_square

t = torch.tensor


def _reference(gap, freq, count, samples=None):
    samples = count if samples is None else samples
    spread = (samples - 1).clamp_min(1).to(freq.dtype)
    square = gap**2 - freq * (1 - freq) / spread
    weight = count / count.sum(dim=-1, keepdim=True)
    return (square * weight.to(square.dtype)).sum(dim=-1)


def test_a_gap_of_one_model_meets_frequencies_of_many_draws() -> None:
    gap, count = t([0.1, 0.0]), t([6.0, 7.0])
    freq = t([[0.5, 0.5], [0.4, 0.3]])
    torch.testing.assert_close(
        debiased_square(gap, freq, count, count), _reference(gap, freq, count)
    )


def test_the_wider_dtype_wins() -> None:
    gap, count = t([0.1, 0.0]), t([6.0, 7.0])
    freq = t([0.5, 0.4], dtype=torch.float64)
    got = debiased_square(gap, freq, count, count)
    assert got.dtype == torch.float64
    torch.testing.assert_close(got, _reference(gap, freq, count))


def test_per_draw_samples_meet_one_model_s_frequencies() -> None:
    gap, freq, count = t([0.1, 0.0]), t([0.5, 0.4]), t([6.0, 7.0])
    samples = t([[6.0, 7.0], [12.0, 14.0]])
    torch.testing.assert_close(
        debiased_square(gap, freq, count, samples), _reference(gap, freq, count, samples)
    )
