"""Two checks of the scalers, with the numbers docs/recalibration.md quotes.

    python benchmarks/recalibration_checks.py [--scales 1e-8 1e-7 1 1e5 1e6]

* Scale: the dev NLL of temperature, vector and matrix scaling (unpenalised, and with the
  default ODIR penalty) fitted on the same logits times ``c``. ``softmax(W (c z) + b)``
  holds the same maps at every ``c``, so an unpenalised fit should give the same NLL at
  every ``c``, at most the temperature's. The logits: ``[1000, 4]``, 3x overconfident,
  with class biases ``(0.5, 0, 0, -0.5)`` that a temperature cannot fit.
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
import warnings

import torch
import torch.nn.functional as F

from calib_metrics.recalibration import MatrixScaling, TemperatureScaling, VectorScaling


def shifted_classifier() -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    z = 3 * torch.randn(1000, 4, generator=g, dtype=torch.float64)
    shift = torch.tensor([0.5, 0.0, 0.0, -0.5], dtype=torch.float64)
    y = torch.multinomial(torch.softmax(z / 3 + shift, -1), 1, generator=g)[:, 0]
    return z, y


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
    parser.add_argument("--scales", type=float, nargs="+", default=[1e-8, 1e-7, 1, 1e5, 1e6])
    parser.add_argument("--float16-scales", type=float, nargs="+", default=[4, 6])
    args = parser.parse_args()
    scale_table(args.scales)
    zero_probabilities()
    for scale in args.float16_scales:
        float16_probabilities(scale)


if __name__ == "__main__":
    main()
