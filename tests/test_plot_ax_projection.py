"""Every figure draws x against y: an ax of another projection is refused by name (a 3-D
one had failed inside matplotlib with "errorbar() missing ... 'z'", a polar one with
"Cannot set Axes adjustable to 'datalim'")."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("matplotlib")

from matplotlib.figure import Figure

from calib_metrics.functional import calibration_error_ci
from calib_metrics.plot import (
    error_curve,
    per_class_errors,
    per_label_errors,
    posterior_time_series,
    reliability_diagram,
)


def _result():
    q = torch.rand(300, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    return calibration_error_ci(q, (q > 0.5).double(), bin_size=30, n_samples=20)


FIGURES = {
    "reliability_diagram": lambda ax: reliability_diagram(_result(), ax),
    "per_label_errors": lambda ax: per_label_errors({"a": _result()}, ax),
    "per_class_errors": lambda ax: per_class_errors({"m": [_result()]}, ["a"], ax),
    "error_curve": lambda ax: error_curve([1, 2], [0.1, 0.2], [0.0, 0.1], [0.2, 0.3], ax),
    "posterior_time_series": lambda ax: posterior_time_series(["a"], [1], [0], [2], ax=ax),
}


@pytest.mark.parametrize("projection", ["3d", "polar", "mollweide"])
@pytest.mark.parametrize("figure", list(FIGURES))
def test_an_ax_of_another_projection_is_refused_by_name(figure, projection) -> None:
    ax = Figure().add_subplot(projection=projection)
    with pytest.raises(ValueError, match=f"plain x and y axes .*got a '{projection}' projection"):
        FIGURES[figure](ax)
    assert not ax.has_data()  # refused before anything was drawn


@pytest.mark.parametrize("figure", list(FIGURES))
def test_a_plain_ax_is_drawn_on(figure) -> None:
    ax = Figure().add_subplot()
    assert FIGURES[figure](ax)[1] is ax
