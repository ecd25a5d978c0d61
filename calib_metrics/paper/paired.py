"""Paired comparisons of two models in the reproductions (issue 15): overall and per label.

The paper's findings are comparisons ("the CRF is better calibrated than the HMM, on 39
of 47 tags"); two overlapping intervals neither prove nor refute them. Each reproduction
compares its two models on the same test items with
:func:`~calib_metrics.functional.compare_calibration` (one resampling of pairs, or of
whole sentences / documents, shared by both models) and counts per-label wins with
:func:`~calib_metrics.functional.compare_calibration_by_label` after Holm's correction.

The estimator is the recommended one (``docs/coverage.md``): the debiased error with
``bin_size="auto"`` (β = ⌈√N⌉), percentile interval of 2000 paired draws; per label
enough draws that Holm's threshold is not below what they can show (:func:`label_draws`).
Under ``--quick`` (a smoke test) every comparison takes :data:`QUICK_SAMPLES` draws instead
(:func:`draws`): the per-label draws, 8m/α whatever the subset's size, had taken 75–86% of
``reproduce pos --quick``.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import torch
from torch import Tensor

from calib_metrics.functional import compare_calibration, compare_calibration_by_label
from calib_metrics.report import (
    adjusted_p_texts,
    fixed,
    no_interval,
    p_value_phrase,
    p_value_text,
)

RECOMMENDED = {"bin_size": "auto", "debias": True, "n_samples": 2000}
CORRECTION = "holm"
ALPHA = 0.05
#: Paired draws of every comparison under ``--quick``: each step runs and each output is
#: drawn, but no Monte Carlo p-value falls below 2/201 ≈ 0.01, so Holm calls few labels.
QUICK_SAMPLES = 200
_TOO_FEW_DRAWS = "compare_calibration_by_label: no label can be called better"


def label_draws(n_labels: int) -> int:
    """Paired draws for a comparison of ``n_labels`` labels: Holm calls the first label at
    p ≤ α/m, and a Monte Carlo p-value of S draws is at least 2/(S + 1)
    (:func:`~calib_metrics.functional.comparison_by_label.monte_carlo_p_values`), so
    S ≥ 8m/α keeps that floor at a quarter of Holm's first threshold; at least the
    recommended 2000.

    Example:
        >>> label_draws(3), label_draws(48), label_draws(100)
        (2000, 7680, 16000)
    """
    return max(RECOMMENDED["n_samples"], math.ceil(8 * n_labels / ALPHA))


def draws(n_labels: int | None = None, quick: bool = False) -> int:
    """Paired draws of one comparison: over all items (``n_labels`` None) the recommended
    2000, per label :func:`label_draws`; :data:`QUICK_SAMPLES` under ``--quick``.

    Example:
        >>> draws(), draws(43), draws(43, quick=True)
        (2000, 6880, 200)
    """
    if quick:
        return QUICK_SAMPLES
    return RECOMMENDED["n_samples"] if n_labels is None else label_draws(n_labels)


def _clean(q: Tensor) -> Tensor:
    # Marginals computed in float32 may exceed 1 (or fall below 0) by a rounding error.
    return q.reshape(-1).double().clamp(0.0, 1.0)


def difference(
    q_a: Tensor,
    q_b: Tensor,
    y: Tensor,
    *,
    groups: Tensor | None = None,
    seed: int = 0,
    quick: bool = False,
) -> dict[str, float]:
    """``error(a) − error(b)`` with its paired 95% interval and p-value, and the number of
    draws (:func:`draws`), JSON-ready.

    Example:
        >>> g = torch.Generator().manual_seed(0)
        >>> q = torch.rand(4000, generator=g, dtype=torch.float64)
        >>> y = torch.bernoulli(q, generator=g)
        >>> d = difference(q.sqrt(), q, y)
        >>> d["lower"] > 0, d["p_value"] < 0.01, sorted(d)
        (True, True, ['a', 'b', 'difference', 'lower', 'p_value', 'samples', 'upper'])
    """
    samples = draws(quick=quick)
    r = compare_calibration(
        _clean(q_a), _clean(q_b), y.reshape(-1).double(),
        groups=None if groups is None else groups.reshape(-1),
        generator=torch.Generator().manual_seed(seed),
        **(RECOMMENDED | {"n_samples": samples}),
    )  # fmt: skip
    out = {k: float(getattr(r, k)) for k in ("difference", "lower", "upper", "p_value")}
    return out | {"a": float(r.a.error), "b": float(r.b.error), "samples": samples}


def format_p(p: float, phrase: bool = False, samples: int = RECOMMENDED["n_samples"]) -> str:
    """A p-value of these comparisons as text (``phrase``: with "p = " or "p "): below
    2/S when none of the ``samples`` draws reached 0 (a result's ``"samples"``: fewer
    under ``--quick``).

    Example:
        >>> format_p(0.0), format_p(0.021), format_p(0.0, phrase=True)
        ('< 0.001', '0.021', 'p < 0.001')
        >>> format_p(0.0, samples=200)
        '< 0.01'
    """
    if phrase:
        return p_value_phrase(p, samples)
    return p_value_text(p, samples)


def adjusted_p_by_label(result: dict[str, Any]) -> dict[str, str]:
    """Each label's corrected p-value of a :func:`by_label` result as text, by label
    (corrected Monte Carlo p-values: numbers, never bounds).

    Example:
        >>> d = {"p_value": 0.0, "adjusted_p_value": 2 * 2 / 2001}
        >>> adjusted_p_by_label({"correction": "holm", "per_label": {"NN": d, "VB": d}})
        {'NN': '0.002', 'VB': '0.002'}
    """
    rows = result["per_label"]
    texts = adjusted_p_texts([r["adjusted_p_value"] for r in rows.values()])
    return dict(zip(rows, texts, strict=True))


def by_label(
    q_a: Tensor,
    q_b: Tensor,
    y: Tensor,
    names: list[str],
    *,
    groups: Tensor | None = None,
    seed: int = 0,
    quick: bool = False,
) -> dict[str, Any]:
    """Per-label differences for queries laid out ``[L, n]`` (row ``l`` is label ``names[l]``).

    Returns the counts (``a_better``, ``b_better``, ``not_distinguishable``, ``of``), the
    correction, level and number of draws (:func:`draws`), and per label its
    difference, interval, p-value, adjusted p-value, verdict, the groups holding its
    positives (``holding``, with ``groups`` given; :func:`holding_groups`) and (under
    ``"_result"``, for figures; not JSON) its ``ComparisonResult``. ``groups`` (``[n]`` or
    ``[L, n]``) are resampled whole within each label.

    Example:
        >>> g = torch.Generator().manual_seed(0)
        >>> q = torch.rand(2, 4000, generator=g, dtype=torch.float64)
        >>> y = torch.bernoulli(q, generator=g)
        >>> worse = torch.stack([q[0].sqrt(), q[1]])
        >>> r = by_label(worse, q, y, ["NN", "VB"])
        >>> r["a_better"], r["b_better"], r["not_distinguishable"], r["of"]
        (0, 1, 1, 2)
        >>> r["per_label"]["NN"]["difference"] > 0
        True
    """
    if q_a.dim() != 2 or q_a.shape[0] != len(names):
        raise ValueError(f"queries must be [L, n] with L = {len(names)}, got {tuple(q_a.shape)}")
    labels = torch.arange(q_a.shape[0], device=q_a.device)[:, None].expand_as(q_a)
    if groups is not None:
        groups = groups.expand_as(q_a)
    samples = draws(len(names), quick)
    with warnings.catch_warnings():
        if quick:
            # Its advice, n_samples=..., names no option of the command (--quick fixes
            # the draws); the results say that --quick's p-values call few labels.
            warnings.filterwarnings("ignore", message=_TOO_FEW_DRAWS, category=UserWarning)
        r = compare_calibration_by_label(
            _clean(q_a), _clean(q_b), y.reshape(-1).double(), labels.reshape(-1),
            groups=None if groups is None else groups.reshape(-1), correction=CORRECTION,
            alpha=ALPHA, generator=torch.Generator().manual_seed(seed),
            **(RECOMMENDED | {"n_samples": samples}),
        )  # fmt: skip
    fields = ("difference", "lower", "upper", "p_value", "adjusted_p_value")
    holding = None if groups is None else holding_groups(y, groups)
    per_label = {
        names[int(label)]: {k: float(getattr(r, k)[i]) for k in fields}
        | {"verdict": int(r.verdict[i]), "_result": r.per_label[i]}
        | ({} if holding is None else {"holding": holding[int(label)]})
        for i, label in enumerate(r.labels.tolist())
    }
    return {
        "a_better": r.a_better,
        "b_better": r.b_better,
        "not_distinguishable": r.not_distinguishable,
        "of": len(per_label),
        "correction": r.correction,
        "alpha": r.alpha,
        "samples": samples,
        "per_label": per_label,
    }


def holding_groups(y: Tensor, groups: Tensor) -> list[int]:
    """How many groups hold each label's positives, for labels ``y`` laid out ``[L, n]`` and
    ``groups`` ``[n]`` or ``[L, n]``. A label of one-vs-rest queries over every item (a
    tag's over every token) spans every group, and the library's rule that leaves labels
    of few resampling units uncalled counts those all; this counts the few a rare label's
    positives lie in.

    Example:
        >>> y = torch.tensor([[1, 1, 0, 0, 1], [0, 0, 0, 0, 0]])
        >>> holding_groups(y, torch.tensor([0, 0, 1, 2, 2]))
        [2, 0]
    """
    groups = groups.expand_as(y)
    return [int(torch.unique(g[row > 0]).numel()) for row, g in zip(y, groups, strict=True)]


def called_on_few(result: dict[str, Any], fewest: int) -> dict[str, int]:
    """The labels of a :func:`by_label` result called better either way although fewer than
    ``fewest`` groups hold their positives: label to that count.

    Example:
        >>> called_on_few({"per_label": {"GW": {"verdict": 1, "holding": 16},
        ...                              "NN": {"verdict": -1, "holding": 900},
        ...                              "LS": {"verdict": 0, "holding": 1}}}, 50)
        {'GW': 16}
    """
    return {
        label: d["holding"]
        for label, d in result["per_label"].items()
        if d["verdict"] != 0 and d.get("holding", fewest) < fewest
    }


def format_difference(d: dict[str, float], units: str) -> str:
    """``+0.0012 [+0.0003, +0.0020]``: a difference with its interval, signs shown; where
    too few ``units`` were resampled for one (NaN ends), what the library's reports write.

    Example:
        >>> format_difference({"difference": 0.0012, "lower": -0.0003, "upper": 0.002}, "pairs")
        '+0.0012 [-0.0003, +0.0020]'
        >>> nan = float("nan")
        >>> format_difference({"difference": -0.0181, "lower": nan, "upper": nan}, "documents")
        '-0.0181, no interval (fewer than 10 resampled documents)'
    """
    difference = fixed(d["difference"], sign="+")
    missing = no_interval(d["lower"], d["upper"], units)
    if missing:
        return f"{difference}, {missing}"
    lower, upper = (fixed(d[k], sign="+") for k in ("lower", "upper"))
    return f"{difference} [{lower}, {upper}]"


def format_counts(c: dict[str, Any], a: str, b: str) -> str:
    """``"a better on 3, b better on 1, not distinguishable on 44 of 48 (Holm, α = 0.05)"``.

    Example:
        >>> c = {"a_better": 3, "b_better": 1, "not_distinguishable": 44, "of": 48,
        ...      "correction": "holm", "alpha": 0.05}
        >>> format_counts(c, "CRF", "HMM")
        'CRF better on 3, HMM better on 1, not distinguishable on 44 of 48 (Holm, α = 0.05)'
    """
    name = {"holm": "Holm", "bh": "Benjamini–Hochberg"}[c["correction"]]
    return (
        f"{a} better on {c['a_better']}, {b} better on {c['b_better']}, not distinguishable "
        f"on {c['not_distinguishable']} of {c['of']} ({name}, α = {c['alpha']:g})"
    )
