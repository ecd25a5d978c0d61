"""Full-batch L-BFGS training of a linear-chain CRF: the one fitting routine of the CRFs.

:class:`~calib_metrics.models.crf.CRFTagger` (word-by-tag emissions) and
:class:`~calib_metrics.models.feature_crf.FeatureCRF` (hashed feature bags) differ only in
how they score a chunk of sentences; both minimise CRFsuite's objective
``sum_n NLL_n + c2 * ||w||^2`` the same way, by mixing in :class:`LBFGSFit`:

* sentences are sorted by length and cut into chunks of at most ``max_tokens`` padded
  positions (:func:`length_chunks`), so padding and the number of recursion steps stay
  small;
* every objective evaluation is the exact full-batch value, gradients accumulated over
  the chunks, with one host synchronisation of its own: the forward-backward passes'
  precision flags, read together (if any is set, the evaluation is redone on the exact
  log-space path);
* L-BFGS with a strong-Wolfe line search runs in float64 by default and the module is
  cast back afterwards; :class:`FitInfo` records what happened.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import torch
from torch import Tensor

from calib_metrics.functional.errors import check_flag, check_not_meta

__all__ = ["FitInfo", "LBFGSFit", "StopRule", "check_c2", "check_fit_options", "length_chunks"]


StopRule = Literal["gradient", "change", "max_iter", "max_eval"]


@dataclass
class FitInfo:
    """What a CRF's ``fit`` did: final objective, evaluations, and whether it converged.

    Attributes:
        objective: the objective ``sum NLL + c2 * ||w||^2`` at the fitted weights.
        n_evals: objective evaluations, the final one (for this summary) included.
        n_iter: L-BFGS iterations.
        converged: the gradient test passed at the fitted weights: ``max_grad <= tol``
            (L-BFGS's ``tolerance_grad``), whatever rule stopped the fit.
        seconds: wall-clock time of the fit.
        stopped_by: the rule that stopped L-BFGS: ``"gradient"`` (``max_grad <= tol``),
            ``"max_iter"`` or ``"max_eval"`` (the budget ran out), or ``"change"``
            (``tolerance_change``: the step, the objective's change or the slope along
            the search direction fell below it). A stop on ``"change"`` says the steps
            became small, not that the optimum is near: ``converged`` tells which. Where
            the slope test fires at the last allowed iteration, the budget is named.
            ``None`` for a summary pickled before this field existed, whose
            ``converged`` meant only that the budget was not used up.
        max_grad: the largest absolute gradient entry at the fitted weights (NaN for
            such an old summary).
    """

    objective: float
    n_evals: int
    n_iter: int
    converged: bool
    seconds: float
    # Defaults keep a FitInfo pickled before these fields existed readable.
    stopped_by: StopRule | None = None
    max_grad: float = math.nan


def length_chunks(lengths: Tensor, max_tokens: int) -> list[tuple[Tensor, int]]:
    """Group sentences of similar length: ``[(indices, width), ...]`` covering every sentence.

    Sentences are sorted by length and cut greedily so that ``len(indices) * width``
    (the padded size of a chunk) stays within ``max_tokens`` (a longer sentence gets a
    chunk of its own). Linear-chain inference loops over the width, so this keeps both
    the padding and the number of steps small.

    Example:
        >>> [(i.tolist(), w) for i, w in length_chunks(torch.tensor([3, 1, 2, 1]), 4)]
        [([1, 3], 1), ([2], 2), ([0], 3)]
    """
    if max_tokens < 1:
        raise ValueError(f"max_tokens must be >= 1, got {max_tokens}")
    if not isinstance(lengths, Tensor) or lengths.dim() != 1:
        raise ValueError("lengths must be a 1-D tensor of sentence lengths")
    if lengths.is_floating_point() or lengths.dtype == torch.bool:
        raise ValueError(f"lengths must be an integer tensor, got {lengths.dtype}")
    check_not_meta(lengths, "lengths")
    order = torch.argsort(lengths, stable=True)
    sorted_lengths = lengths[order].tolist()
    if sorted_lengths and sorted_lengths[0] < 1:
        raise ValueError(f"lengths must be >= 1 (a token at least), got {sorted_lengths[0]}")
    chunks: list[tuple[Tensor, int]] = []
    begin = 0
    for i in range(1, len(sorted_lengths) + 1):
        if i == len(sorted_lengths) or (i - begin + 1) * sorted_lengths[i] > max_tokens:
            chunks.append((order[begin:i], int(sorted_lengths[i - 1])))
            begin = i
    return chunks


def check_fit_options(
    c2: float,
    max_iter: int,
    max_tokens: int,
    history_size: int = 10,
    *,
    tol: float = 1e-5,
    tolerance_change: float = 1e-9,
    dtype: torch.dtype = torch.float64,
) -> None:
    """Reject a negative, NaN or infinite ``c2``, ``tol`` or ``tolerance_change``, a
    non-positive-int ``max_iter`` / ``max_tokens`` / ``history_size``, and a ``dtype``
    that is not a floating-point ``torch.dtype``.

    A NaN or negative tolerance had been accepted and the fit reported ``converged=True``;
    ``dtype=torch.int64`` and ``"float64"`` failed inside ``nn.Module.to`` with a
    TypeError, and a RuntimeError about a device string.

    Example:
        >>> check_fit_options(0.1, 100, 8192)
        >>> check_fit_options(-1.0, 100, 8192)
        Traceback (most recent call last):
        ...
        ValueError: c2 must be a finite number >= 0, got -1.0
    """
    for name, value in (("c2", c2), ("tol", tol), ("tolerance_change", tolerance_change)):
        _check_non_negative(name, value)
    if isinstance(max_iter, bool) or not isinstance(max_iter, int) or max_iter < 1:
        raise ValueError(f"max_iter must be a positive int, got {max_iter!r}")
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise ValueError(f"max_tokens must be a positive int, got {max_tokens!r}")
    if isinstance(history_size, bool) or not isinstance(history_size, int) or history_size < 1:
        raise ValueError(f"history_size must be a positive int, got {history_size!r}")
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise ValueError(
            f"dtype must be a floating-point torch.dtype (torch.float64 recommended), got {dtype!r}"
        )


def check_c2(c2: float) -> None:
    """Reject an L2 strength ``c2`` that is not a finite number >= 0, wherever the
    objective is computed (a fit, or the objective alone), with fit's message.

    Example:
        >>> check_c2(-5.0)
        Traceback (most recent call last):
        ...
        ValueError: c2 must be a finite number >= 0, got -5.0
    """
    _check_non_negative("c2", c2)


def _check_non_negative(name: str, value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < math.inf:
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")


Chunk = tuple[Tensor, Tensor, Tensor]


class LBFGSFit:
    """Mixin for an ``nn.Module`` CRF: full-batch L-BFGS on ``sum NLL + c2 * ||w||^2``.

    The module provides ``_nll(inputs, tags, mask, flags) -> [B]`` (unchecked, with the
    forward-backward's precision checks appended to ``flags`` when it is a list) and
    ``l2_penalty()``; its ``fit`` checks the batch and calls :meth:`_fit_lbfgs`.

    Example:
        >>> from calib_metrics.models.crf import CRFTagger
        >>> words, tags = torch.tensor([[1, 2, 1]]), torch.tensor([[0, 1, 0]])
        >>> crf = CRFTagger(2, 3).fit(words, tags, c2=0.1, progress=False)
        >>> crf.fit_info.converged, crf.viterbi(words)[1].tolist()
        (True, [[0, 1, 0]])
    """

    fit_info: FitInfo | None

    def _nll(self, inputs: Tensor, tags: Tensor, mask: Tensor, flags: list[Tensor] | None):
        raise NotImplementedError

    def _start_at_zero(self, freeze_boundary: bool) -> None:
        """Every weight 0 (the objective is convex: CRFsuite starts there too); with
        ``freeze_boundary`` the ``crf``'s start and end scores stay 0, out of training."""
        check_flag("freeze_boundary", freeze_boundary)  # "no" is truthy: it had frozen them
        with torch.no_grad():
            for p in self.parameters():
                p.zero_()
        if freeze_boundary:
            self.crf.start_transitions.requires_grad_(False)
            self.crf.end_transitions.requires_grad_(False)
        self.fit_info = None

    def l2_penalty(self) -> Tensor:
        """``||w||^2`` over the trained weights (frozen parameters excluded)."""
        squares = [p.pow(2).sum() for p in self.parameters() if p.requires_grad]
        if not squares:
            return next(self.parameters()).new_zeros(())
        return torch.stack(squares).sum()

    def _fit_lbfgs(
        self,
        inputs: Tensor,
        tags: Tensor,
        mask: Tensor,
        *,
        c2: float,
        max_iter: int,
        tol: float,
        tolerance_change: float,
        history_size: int,
        max_tokens: int,
        dtype: torch.dtype,
        progress: bool = False,
    ) -> FitInfo:
        """Minimise the objective over the (already checked) batch, after checking the
        options (:func:`check_fit_options`); return :class:`FitInfo`."""
        check_fit_options(
            c2,
            max_iter,
            max_tokens,
            history_size,
            tol=tol,
            tolerance_change=tolerance_change,
            dtype=dtype,
        )
        check_flag("progress", progress)  # "no" is truthy: it had shown the bar
        chunks = [
            (inputs[idx, :width], tags[idx, :width], mask[idx, :width])
            for idx, width in length_chunks(mask.sum(1), max_tokens)
        ]
        original_dtype = next(self.parameters()).dtype
        self.to(dtype)
        params = [p for p in self.parameters() if p.requires_grad]
        optimizer = torch.optim.LBFGS(
            params,
            lr=1.0,
            max_iter=max_iter,
            max_eval=max_iter * 5 // 4 + 1,
            tolerance_grad=tol,
            tolerance_change=tolerance_change,
            history_size=history_size,
            line_search_fn="strong_wolfe",
        )
        begin = time.perf_counter()
        n_evals = self._minimise(optimizer, chunks, c2, progress)
        info = self._finish(optimizer, params, chunks, c2, n_evals, begin)
        self.to(original_dtype)
        self.zero_grad(set_to_none=True)
        return info

    def _objective(self, chunks: Sequence[Chunk], c2: float) -> Tensor:
        """Full-batch objective with its gradient accumulated in ``.grad``.

        One host synchronisation: the precision flags of every chunk, read at once.
        """
        total = self._accumulate(chunks, c2, flags := [])
        if flags and bool(torch.stack(flags).any()):
            # Scores extreme enough for the rescaled recursion to lose precision: redo
            # every chunk on the checked path, which falls back to log space where needed.
            total = self._accumulate(chunks, c2, None)
        return total

    def _accumulate(self, chunks: Sequence[Chunk], c2: float, flags: list[Tensor] | None):
        for p in self.parameters():
            p.grad = None
        total = next(self.parameters()).new_zeros(())
        for x, t, m in chunks:
            loss = self._nll(x, t, m, flags).sum()
            loss.backward()
            total = total + loss.detach()
        if c2 > 0:
            penalty = c2 * self.l2_penalty()
            penalty.backward()
            total = total + penalty.detach()
        return total

    def _minimise(self, optimizer, chunks: Sequence[Chunk], c2: float, progress: bool) -> int:
        """Run L-BFGS to its stopping rule; returns the number of objective evaluations."""
        from tqdm.auto import tqdm

        n_evals = 0
        bar = tqdm(desc="CRF L-BFGS", unit="eval", disable=not progress, leave=False)

        def closure() -> Tensor:
            nonlocal n_evals
            total = self._objective(chunks, c2)
            n_evals += 1
            if progress:
                bar.update(1)
                bar.set_postfix(objective=f"{total.item():.6g}")
            return total

        try:
            optimizer.step(closure)
        finally:
            bar.close()
        return n_evals

    def _finish(self, optimizer, params, chunks, c2: float, n_evals: int, begin: float):
        """One more evaluation (objective and gradient at the end) and the fit summary."""
        n_iter = int(optimizer.state[params[0]].get("n_iter", 0))
        final = self._objective(chunks, c2).item()
        max_grad = float(torch.stack([p.grad.abs().max() for p in params]).max())
        return FitInfo(
            objective=final,
            n_evals=n_evals + 1,
            n_iter=n_iter,
            # Only the gradient test vouches for the optimum: L-BFGS also stops on
            # tolerance_change, where its steps stall far from it (max |grad| 8 had
            # been reported as converged).
            converged=max_grad <= optimizer.defaults["tolerance_grad"],
            seconds=time.perf_counter() - begin,
            stopped_by=_stop_rule(optimizer.defaults, max_grad, n_iter, n_evals),
            max_grad=max_grad,
        )


def _stop_rule(options: dict, max_grad: float, n_iter: int, n_evals: int) -> StopRule:
    """Which of ``torch.optim.LBFGS``'s rules stopped it, read from where it stopped.

    Its loop tests the budget (iterations, then evaluations) before the gradient, and
    the gradient before the change tests; a gradient that passes at the end is reported
    as the reason even when the budget ran out at the same step, since it is the one
    that says the fit is done.
    """
    if max_grad <= options["tolerance_grad"]:
        return "gradient"
    if n_iter >= options["max_iter"]:
        return "max_iter"
    if n_evals >= options["max_eval"]:
        return "max_eval"
    return "change"
