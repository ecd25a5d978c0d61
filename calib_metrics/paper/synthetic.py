"""The thesis' synthetic predictions (§4.3): q ~ Beta(a, b), y ~ Bernoulli(t_k(q)).

``t_k`` is the thesis' miscalibration: t_k(q) = max(0, q − k) for q ≤ 1/2 and
min(1, q + k) above (the thesis prints ``min(0, ·)``, a typo for ``min(1, ·)``), so the
true label frequency lies k further from 1/2 than the prediction: an underconfident
model. k = 0 gives perfectly calibrated pairs. Because q is known exactly, the true
calibration error sqrt(E[(q − t_k(q))²]) is known too (:func:`true_calibration_error`).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor


def miscalibrate(q: Tensor, k: float) -> Tensor:
    """The thesis' t_k(q): the true P(y = 1 | q) of a prediction q.

    Example:
        >>> miscalibrate(torch.tensor([0.05, 0.3, 0.7, 0.95]), 0.1)
        tensor([0.0000, 0.2000, 0.8000, 1.0000])
    """
    if not 0 <= k <= 0.5:
        raise ValueError(f"k must lie in [0, 0.5], got {k!r}")
    return torch.where(q <= 0.5, (q - k).clamp_min(0), (q + k).clamp_max(1))


def sample_pairs(
    n: int,
    a: float = 0.3,
    b: float = 0.3,
    k: float = 0.0,
    *,
    generator: torch.Generator | None = None,
    dtype: torch.dtype = torch.float32,
    device: torch.device | str | None = None,
) -> tuple[Tensor, Tensor]:
    """n pairs q ~ Beta(a, b), y ~ Bernoulli(t_k(q)), drawn with ``generator``.

    Beta draws come from two Gamma draws made by the generator (torch's own Beta
    sampler takes no generator), so a seed fixes the data.

    Example:
        >>> q, y = sample_pairs(5, generator=torch.Generator().manual_seed(0))
        >>> q.shape, y.shape, bool(((q >= 0) & (q <= 1)).all())
        (torch.Size([5]), torch.Size([5]), True)
    """
    if n < 1:
        raise ValueError(f"n must be positive, got {n}")
    x = _gamma(a, n, generator, device)
    z = _gamma(b, n, generator, device)
    q = (x / (x + z)).to(dtype)
    u = torch.rand(n, generator=generator, device=device, dtype=torch.float64)
    y = (u < miscalibrate(q.to(torch.float64), k)).to(dtype)
    return q, y


def _gamma(shape: float, n: int, generator, device) -> Tensor:
    """Gamma(shape, 1) draws by Marsaglia–Tsang with the shape-boost for shape < 1."""
    boost = shape < 1
    alpha = shape + 1 if boost else shape
    d = alpha - 1 / 3
    c = 1 / math.sqrt(9 * d)
    out = torch.empty(n, dtype=torch.float64, device=device)
    todo = torch.arange(n, device=device)
    while todo.numel():
        m = todo.numel()
        x = torch.randn(m, generator=generator, device=device, dtype=torch.float64)
        u = torch.rand(m, generator=generator, device=device, dtype=torch.float64)
        v = (1 + c * x) ** 3
        ok = (v > 0) & (
            torch.log(u.clamp_min(1e-300))
            < 0.5 * x**2 + d - d * v + d * torch.log(v.clamp_min(1e-300))
        )
        out[todo[ok]] = d * v[ok]
        todo = todo[~ok]
    if boost:
        u = torch.rand(n, generator=generator, device=device, dtype=torch.float64)
        out = out * u.clamp_min(1e-300) ** (1 / shape)
    return out


def true_calibration_error(a: float, b: float, k: float, points: int = 400_001) -> float:
    """sqrt(E[(q − t_k(q))²]) under q ~ Beta(a, b), by numerical integration.

    Integrates over u = logit(q), where the integrand q^a (1 − q)^b (q − t_k(q))² / B(a, b)
    is smooth and decays fast, with the trapezoid rule on [−60, 60].

    Example:
        >>> true_calibration_error(0.3, 0.3, 0.0)
        0.0
        >>> round(true_calibration_error(1.0, 1.0, 0.1), 4)
        0.0931
    """
    if k == 0:
        return 0.0
    u = torch.linspace(-60, 60, points, dtype=torch.float64)
    q = torch.sigmoid(u)
    log_beta = math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)
    log_weight = a * torch.nn.functional.logsigmoid(u) + b * torch.nn.functional.logsigmoid(-u)
    density = torch.exp(log_weight - log_beta)
    mse = torch.trapezoid(density * (q - miscalibrate(q, k)) ** 2, u)
    return math.sqrt(mse.item())
