"""``bin_size="auto"``: the adaptive bin size β as a function of the number of pairs N.

The rule is β = ⌈√N⌉ (so about √N bins of about √N pairs), the thesis' β ∝ √N with the
constant C = 1 chosen by ``benchmarks/coverage.py`` (see ``docs/coverage.md``, "Choosing
β"): among C ∈ {½, 1, 2, 4}, C = 1 gives the recommended interval (debiased, recentred
pair bootstrap) the coverage closest to 95% at N = 10⁴ and 10⁵ (500 repetitions each).
A larger C lowers the debiased estimator's RMSE, but its binning bias, which grows with
β, then outgrows the standard error and the intervals miss; a smaller C leaves each bin's
frequency noisier. About N^(1/3) bins (β = ⌈N^(2/3)⌉, the plug-in's optimum in the
literature) was run against it at N = 10³–10⁵ on independent, grouped and one-vs-rest
(10-class) data (issue 13; ``docs/coverage.md``, "⌈√N⌉ or about N^(1/3) bins?"): it
lowers the debiased RMSE by 10–30%, but its binning bias (up to 0.0025 at N = 10⁴) makes
the interval under-cover (lowest coverage over k: 0.80–0.90 at N ≥ 10⁴), so ⌈√N⌉ stays."""

from __future__ import annotations

import math

from calib_metrics.functional.errors import as_int, python_int_hint

AUTO = "auto"


def auto_bin_size(n: int) -> int:
    """The adaptive bin size of ``bin_size="auto"`` for ``n`` pairs: ⌈√n⌉.

    Example:
        >>> auto_bin_size(10_000), auto_bin_size(200_000), auto_bin_size(1)
        (100, 448, 1)
    """
    n = as_int("the number of pairs", n)  # a count, read: a NumPy integer will do
    return math.isqrt(n - 1) + 1


def check_bin_size(bin_size: object) -> None:
    """Raise ValueError unless ``bin_size`` is a positive integer (not a bool) or ``"auto"``.

    The message names ``"auto"``, the default and recommended value: one that named the
    integers alone left ``bin_size="Auto"`` (or ``"sqrt"``) looking like a value that
    strings cannot take.

    Example:
        >>> check_bin_size("auto"), check_bin_size(5000)
        (None, None)
        >>> check_bin_size("Auto")
        Traceback (most recent call last):
        ...
        ValueError: bin_size must be a positive integer or 'auto', got 'Auto'
    """
    if bin_size == AUTO:
        return
    if not isinstance(bin_size, int) or isinstance(bin_size, bool) or bin_size < 1:
        raise ValueError(
            f"bin_size must be a positive integer or 'auto', got {bin_size!r}"
            f"{python_int_hint('bin_size', bin_size, 1)}"
        )


def resolve_bin_size(bin_size: int | str, n: int) -> int:
    """``bin_size`` itself, or :func:`auto_bin_size` of ``n`` when it is ``"auto"``.

    Example:
        >>> resolve_bin_size("auto", 1_000_000), resolve_bin_size(5000, 1_000_000)
        (1000, 5000)
    """
    check_bin_size(bin_size)
    return auto_bin_size(n) if bin_size == AUTO else bin_size
