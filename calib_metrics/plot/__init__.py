r"""Matplotlib figures: reliability diagrams, per-label errors, curves and time series.

Every function draws on a given ``ax`` (of plain x and y axes: a 3-D, polar or other
projection is refused) or on a new ``matplotlib.figure.Figure`` (never
pyplot's global state, so nothing leaks between calls or threads) and returns
``(fig, ax)``. This module is imported lazily: the metric works without matplotlib.

Every text a function takes from its caller (titles, labels, legend entries, model and
label names, periods) is drawn as given (:func:`literal`): a ``$`` is a dollar sign, never
the start of matplotlib's mathtext, since file and label names hold them; and a ``\$``
shows its backslash too (matplotlib alone would draw it as an escaped ``$``). For mathtext
on purpose, set the text on the returned axes after drawing::

    fig, ax = reliability_diagram(result)
    ax.set_title(r"$\alpha$ = 0.1")

A figure that shows an interval names its level and kind (:func:`interval_label`), from
the settings the caller passes or, for a reliability diagram and per-label errors, those
its results carry (:func:`~calib_metrics.functional.intervals.interval_kind`): nothing
assumes 95%. Sizes
and fonts are chosen so that the figures stay legible as TensorBoard thumbnails (about
300 px wide).

The figures' parts, each in its module: ``_text`` (the words drawn), ``_arguments`` (the
axes and numbers every figure takes), ``_probability_axis``, ``_counts`` and ``_smooth``
(the parts of a reliability diagram), ``_reliability``, ``_shared_axis`` (one x axis for
diagrams side by side), ``_labels`` (per-label and per-class errors) and ``_series``
(errors over steps, counts over periods). Import from
this package, not from them.
"""

from calib_metrics.plot._counts import COUNT_AXIS, DIAGONAL
from calib_metrics.plot._labels import per_class_errors, per_label_errors
from calib_metrics.plot._probability_axis import END, END_SHARE, N_SLICES
from calib_metrics.plot._reliability import reliability_diagram
from calib_metrics.plot._series import COUNT_NOISE, error_curve, posterior_time_series
from calib_metrics.plot._shared_axis import SharedXAxis, shared_x_axis
from calib_metrics.plot._text import (
    INTERVAL_KINDS,
    MAX_TICK_CHARS,
    NORMS,
    describe,
    error_name,
    interval_label,
    literal,
)

__all__ = [
    "COUNT_AXIS",
    "COUNT_NOISE",
    "DIAGONAL",
    "END",
    "END_SHARE",
    "INTERVAL_KINDS",
    "MAX_TICK_CHARS",
    "NORMS",
    "N_SLICES",
    "SharedXAxis",
    "describe",
    "error_curve",
    "error_name",
    "interval_label",
    "literal",
    "per_class_errors",
    "per_label_errors",
    "posterior_time_series",
    "reliability_diagram",
    "shared_x_axis",
]
