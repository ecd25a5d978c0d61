"""Two checks of the scalers, with the numbers docs/recalibration.md quotes.

    python benchmarks/recalibration_checks.py [--scales 1e-8 1e-7 1 1e5 1e6]

* Scale: the dev NLL of temperature, vector and matrix scaling (unpenalised, and with the
  default ODIR penalty) fitted on the same logits times ``c``. ``softmax(W (c z) + b)``
  holds the same maps at every ``c``, so an unpenalised fit should give the same NLL at
  every ``c``, at most the temperature's. The logits: ``[1000, 4]``, 3x overconfident,
  with class biases ``(0.5, 0, 0, -0.5)`` that a temperature cannot fit.
* Masks: vector and matrix scaling (unpenalised) of logits ``[2000, 10]`` (3x
  overconfident, class biases from 0.5 to -0.5) whose items mask 6 random classes each
  (never the target) with a large finite score, against two optima by scipy's BFGS:
  vector scaling's with ``-inf`` masks, which a finite mask should give, and matrix
  scaling's of the finite masks themselves (its weights on a masked class act on the mask;
  fitted in units of ``1 / |mask|``). Needs scipy.
* Zero probabilities: ``TemperatureScaling(inputs="probs")`` on the softmax of logits
  ``[2000, 10]`` (4x overconfident) whose classes 5-9 are masked with ``-inf`` (their
  probabilities exactly 0), against the same model's masked logits: the two ``T`` and
  the largest mass the fitted map puts on the masked classes.
* Probabilities saved in float16: ``TemperatureScaling(inputs="probs")`` on the float16
  softmax of logits ``[100000, 10]`` (4x and 6x overconfident, ``--float16-scales``),
  where a confidently wrong item's target underflows to 0 (fitted at 1e-12, with a
  warning), against the logits' ``T``.
"""

from __future__ import annotations

import argparse
import math
import sys
import warnings
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._args import number, positive
from calib_metrics.recalibration import MatrixScaling, TemperatureScaling, VectorScaling
from calib_metrics.recalibration._common import MASK_FLOOR


def shifted_classifier() -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    z = 3 * torch.randn(1000, 4, generator=g, dtype=torch.float64)
    shift = torch.tensor([0.5, 0.0, 0.0, -0.5], dtype=torch.float64)
    y = torch.multinomial(torch.softmax(z / 3 + shift, -1), 1, generator=g)[:, 0]
    return z, y


# The smallest c at which every fit of scale_table converges, as measured: at
# 1e-156 (below about 6.6e-156) unpenalised matrix scaling's line search fails, where the
# squares of the logits c·z (about 1e-309) fall below float64's smallest normal number
# (2.2e-308); the temperature, vector and penalised matrix fits still converge at 1e-200.
SMALLEST_SCALE = 1e-155


def largest_scale() -> float:
    """The largest c, a power of 10, at which every logit c·z of :func:`scale_table` stays
    above the library's mask floor (``MASK_FLOOR``, -1e200): past it a fit reads the
    lowest logits as masked classes, the targets' among them (the library's refusal)."""
    z, _ = shifted_classifier()
    return 10.0 ** math.floor(math.log10(-MASK_FLOOR / z.abs().max().item()))


def scale_table(scales: list[float]) -> None:
    z, y = shifted_classifier()
    print("dev NLL of logits × c (unpenalised unless said)")
    print(f"{'c':>8} {'temperature':>12} {'vector':>8} {'matrix':>8} {'matrix ODIR':>12}")
    for c in scales:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the old code's silent misfits said nothing
            fits = [
                TemperatureScaling().fit(c * z, y),
                VectorScaling().fit(c * z, y),
                MatrixScaling(0.0, 0.0).fit(c * z, y),
                MatrixScaling().fit(c * z, y),
            ]
        nll = [F.cross_entropy(f.calibrated_logits(c * z), y).item() for f in fits]
        print(f"{c:>8g} {nll[0]:>12.4f} {nll[1]:>8.4f} {nll[2]:>8.4f} {nll[3]:>12.4f}")


def masked_rows() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(1)
    z = 3 * torch.randn(2000, 10, generator=g, dtype=torch.float64)
    masked = torch.rand(2000, 10, generator=g).argsort(-1) < 6
    shift = torch.linspace(0.5, -0.5, 10, dtype=torch.float64)
    allowed = torch.softmax((z / 3 + shift).masked_fill(masked, -math.inf), -1)
    y = torch.multinomial(allowed, 1, generator=g)[:, 0]
    return z, y, masked


def best_nll(z, y, matrix: bool, masked=None, off_unit: float = 1.0) -> float:
    """The unpenalised optimum of ``softmax(w * z + b)`` (or ``W z + b``, its off-diagonal
    weights in units of ``off_unit``) by scipy's BFGS; ``masked`` outputs at ``-inf``."""
    from scipy import optimize

    c = z.shape[1]
    eye = torch.eye(c, dtype=torch.float64)
    start = torch.cat([eye.flatten() if matrix else torch.ones(c), torch.zeros(c)])

    def nll_and_grad(flat):
        params = torch.tensor(flat, dtype=torch.float64, requires_grad=True)
        w, b = params[:-c], params[-c:]
        out = z @ (w.view(c, c) * (eye + (1 - eye) * off_unit)).t() + b if matrix else z * w + b
        if masked is not None:
            out = out.masked_fill(masked, -math.inf)
        loss = F.cross_entropy(out, y)
        loss.backward()
        return loss.item(), params.grad.numpy()

    found = optimize.minimize(
        nll_and_grad, start.double().numpy(), jac=True, method="BFGS", options={"gtol": 1e-10}
    )
    return float(found.fun)


def mask_table() -> None:
    z, y, masked = masked_rows()
    print(
        "logits [2000, 10], 6 classes of each item masked: vector scaling's optimum with -inf "
        f"masks {best_nll(z, y, False, masked):.6f}"
    )
    print(f"{'mask':>10} {'vector':>9} {'matrix':>9} {'matrix optimum':>15}")
    for mask in (-1e9, torch.finfo(torch.float32).min, torch.finfo(torch.float64).min):
        logits = z.masked_fill(masked, mask)
        read = max(mask, MASK_FLOOR)  # where a fit reads a lower logit
        best = best_nll(z.masked_fill(masked, read), y, True, off_unit=-1 / read)
        vector = VectorScaling().fit(logits, y).nll_
        matrix = MatrixScaling(0.0, 0.0).fit(logits, y).nll_
        print(f"{mask:>10.3g} {vector:>9.6f} {matrix:>9.6f} {best:>15.6f}")


def zero_probabilities() -> None:
    g = torch.Generator().manual_seed(0)
    z = 4 * torch.randn(2000, 10, generator=g, dtype=torch.float64)
    masked = torch.zeros_like(z, dtype=torch.bool)
    masked[:, 5:] = True
    logits = z.masked_fill(masked, -math.inf)
    y = torch.multinomial(torch.softmax(logits / 4, -1), 1, generator=g)[:, 0]
    probs = torch.softmax(logits, -1)
    from_logits = TemperatureScaling().fit(logits, y).temperature.item()
    scaler = TemperatureScaling(inputs="probs").fit(probs, y)
    leaked = scaler(probs).masked_fill(~masked, 0.0).sum(-1).max().item()
    fitted = scaler.temperature.item()
    print(
        f"T from -inf-masked logits {from_logits:.4f}, from their probabilities {fitted:.4f}; "
        f"most mass on the masked classes {leaked:.4%}"
    )


def float16_probabilities(scale: float) -> None:
    g = torch.Generator().manual_seed(0)
    z = scale * torch.randn(100_000, 10, generator=g, dtype=torch.float64)
    y = torch.multinomial(torch.softmax(z / scale, -1), 1, generator=g)[:, 0]
    probs = torch.softmax(z.float(), -1).half()
    at_zero = int((probs.gather(1, y.unsqueeze(1)) == 0).sum())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fitted = TemperatureScaling(inputs="probs").fit(probs, y).temperature.item()
    from_logits = TemperatureScaling().fit(z, y).temperature.item()
    zeros = int((probs == 0).sum())
    print(
        f"float16 probabilities, {scale:g}x overconfident: {at_zero} of {len(y)} targets at 0, "
        f"{zeros} zeros in all; T from them {fitted:.4f} ({len(caught)} warnings), from the "
        f"logits {from_logits:.4f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    largest = largest_scale()
    parser.add_argument(
        "--scales",
        type=number(
            SMALLEST_SCALE,
            largest,
            why="where every fit converges, and logits c·z above the mask floor",
        ),
        nargs="+",
        default=[1e-8, 1e-7, 1, 1e5, 1e6],
        help=f"factors c of the logits, from {SMALLEST_SCALE:g} to {largest:g}",
    )
    parser.add_argument(
        "--float16-scales",
        type=positive,
        nargs="+",
        default=[4, 6],
        help="how many times overconfident the float16 probabilities are, above 0",
    )
    args = parser.parse_args()
    scale_table(args.scales)
    mask_table()
    zero_probabilities()
    for scale in args.float16_scales:
        float16_probabilities(scale)


if __name__ == "__main__":
    main()
