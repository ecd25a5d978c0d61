"""``--mode classwise --plot``: one reliability diagram per class, for ``evaluate`` and
``compare`` alike.

The classwise error averages the classes' errors, each from its own bins; one diagram
of every class's bins together would mix the classes. So the figure has one panel per
class (:func:`calib_metrics.plot_panels.reliability_panels`: the class's one-vs-rest
pairs, q = probs[c] and y = [target = c]), with ``compare``'s two models overlaid in each
panel (a in blue, b in orange). Each panel's interval is the one behind the command's
average: ``evaluate``'s, the model's own bootstrap on that class's pairs with the
command's estimator; ``compare``'s, the class's share of the paired draws (percentile
intervals over items or groups, as its text says); ``--plot-smooth`` adds each class's
smooth curve and band. With more than ``plot_panels.MAX_CLASS_PANELS`` (12) classes, the
figure draws the 12 most frequent labels (ties: the lower class id), in class order, and
its title says how many of how many.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor


def drawn_classes(target: Tensor, n_classes: int, limit: int | None = None) -> list[int]:
    """The classes the figure draws: all of them up to ``limit`` (default
    :data:`calib_metrics.plot_panels.MAX_CLASS_PANELS`), else the ``limit`` most frequent
    labels in ``target`` (ties: the lower id), in class order.

    Example:
        >>> drawn_classes(torch.tensor([3, 3, 1, 0, 3, 1, 2]), 4, limit=2)
        [1, 3]
        >>> drawn_classes(torch.tensor([0, 1]), 3)
        [0, 1, 2]
    """
    from calib_metrics.functional.multiclass import most_frequent
    from calib_metrics.plot_panels import MAX_CLASS_PANELS

    counts = torch.bincount(target.reshape(-1), minlength=n_classes).tolist()
    return most_frequent(counts, MAX_CLASS_PANELS if limit is None else limit)


def class_panels(
    args: argparse.Namespace,
    models: Sequence[tuple[Tensor, Tensor]],
    names: Sequence[str],
    groups: Tensor | None,
    estimator: dict[str, Any],
    title: str,
    tags: Sequence[str] | None = None,
    computed: Sequence[Sequence[Any]] | None = None,
) -> tuple[Any, list[int]]:
    """The figure of per-class reliability diagrams of ``models`` ((probs [N, C], class
    ids) each, the same items), for ``--plot`` and the ``--html`` page, and the classes
    drawn. ``names`` name the models in the legend, ``tags`` (short) in the panels' titles.

    ``estimator``: :func:`~calib_metrics.functional.calibration_error_ci`'s options
    (without ``groups`` and ``generator``: each model draws from a generator seeded with
    ``args.seed``, class after class, as the classwise average does). ``computed``: each
    model's results of every class, drawn already (``evaluate``'s classwise average,
    ``compare``'s paired draws), used as they are: the panels then show the intervals the
    page's table and the average hold (drawn again for a subset of the classes, they had
    differed from those, and a comparison's had been of another kind).
    """
    from calib_metrics.cli import smooth_curve_for_plot
    from calib_metrics.functional import calibration_error_ci
    from calib_metrics.functional.multiclass import pair_sets
    from calib_metrics.plot_panels import reliability_panels

    probs, target = models[0]
    n_classes = probs.shape[-1]
    classes = drawn_classes(target, n_classes)
    sets = [pair_sets(p, t, "classwise", groups) for p, t in models]
    generators = [torch.Generator().manual_seed(args.seed) for _ in models]
    results, curves = {}, {}
    for c in classes:
        pairs = [model_sets[c] for model_sets in sets]
        results[f"class {c}"] = (
            [model_results[c] for model_results in computed]
            if computed is not None
            else [
                calibration_error_ci(q, y, groups=g, generator=gen, **estimator)
                for (q, y, g), gen in zip(pairs, generators, strict=True)
            ]
        )
        curves[f"class {c}"] = [smooth_curve_for_plot(args, q, y, g) for q, y, g in pairs]
    shown = len(classes) < n_classes
    note = (
        f"{len(classes)} of {n_classes} classes drawn: the most frequent labels" if shown else None
    )
    fig, _ = reliability_panels(
        results, names=names, tags=tags, smooth=curves if args.plot_smooth else None,
        confidence=estimator["confidence"], interval=estimator["interval"],
        debias=estimator["debias"], norm=estimator.get("norm", "l2"), title=title, note=note,
    )  # fmt: skip
    return fig, classes
