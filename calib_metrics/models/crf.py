"""A linear-chain CRF tagger with tag-tag and tag-word features (the paper's §4.2 CRF).

The parameters live in pytorch-crf's :class:`torchcrf.CRF` (transitions, start and
end scores) plus a word-by-tag emission table; the feature set is exactly the
HMM's (tag-tag and tag-word), so the comparison is between generative and
discriminative training, not between feature sets. Training is full-batch L-BFGS
on CRFsuite's objective ``sum NLL + c2 * ||w||^2``; inference (marginals, Viterbi,
samples) runs on :mod:`calib_metrics.models.linear_chain` with the CRF's own
parameters, since pytorch-crf has no marginals.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch
from torch import Tensor, nn
from torchcrf import CRF

from calib_metrics.models import linear_chain
from calib_metrics.models.chain_tagger import ChainTagger, check_words


@dataclass
class FitInfo:
    """What :meth:`CRFTagger.fit` did: final objective, evaluations, and whether it converged."""

    objective: float
    n_evals: int
    n_iter: int
    converged: bool
    seconds: float


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
    order = torch.argsort(lengths, stable=True)
    sorted_lengths = lengths[order].tolist()
    chunks: list[tuple[Tensor, int]] = []
    begin = 0
    for i in range(1, len(sorted_lengths) + 1):
        if i == len(sorted_lengths) or (i - begin + 1) * sorted_lengths[i] > max_tokens:
            chunks.append((order[begin:i], int(sorted_lengths[i - 1])))
            begin = i
    return chunks


class CRFTagger(ChainTagger):
    """First-order CRF tagger with tag-tag and tag-word features.

    ``score(x, y) = start[y_0] + sum_t (E[x_t, y_t] + A[y_{t-1}, y_t]) + end[y_L]``.

    ``E`` is :attr:`emission` (an ``nn.Embedding(vocab_size, num_tags)``, row 0 the
    unknown word) and ``A``, ``start``, ``end`` are ``crf.transitions``,
    ``crf.start_transitions`` and ``crf.end_transitions`` of the wrapped
    :class:`torchcrf.CRF`. All weights start at 0 (the objective is convex, so the
    optimum does not depend on the start), as CRFsuite does.

    Args:
        num_tags: number of tags ``K``.
        vocab_size: number of word indices ``V`` (index 0 = unknown word).
        freeze_boundary: keep the start and end scores at 0 and out of training,
            which is CRFsuite's model (it has no start/end features).

    Example:
        >>> words = torch.tensor([[1, 2, 1], [2, 1, 0]])
        >>> tags = torch.tensor([[0, 1, 0], [1, 0, 0]])
        >>> mask = torch.tensor([[True, True, True], [True, True, False]])
        >>> crf = CRFTagger(num_tags=2, vocab_size=3).fit(words, tags, mask, c2=0.1, progress=False)
        >>> crf.viterbi(words, mask)[1]
        tensor([[0, 1, 0],
                [1, 0, 0]])
        >>> marg = crf.marginals(words, mask)
        >>> bool((marg.unigram.argmax(-1)[mask] == tags[mask]).all())
        True
    """

    def __init__(self, num_tags: int, vocab_size: int, *, freeze_boundary: bool = False):
        super().__init__()
        if num_tags < 1:
            raise ValueError(f"num_tags must be >= 1, got {num_tags}")
        if vocab_size < 1:
            raise ValueError(
                f"vocab_size must be >= 1 (index 0 is the unknown word), got {vocab_size}"
            )
        self.num_tags = num_tags
        self.vocab_size = vocab_size
        self.freeze_boundary = freeze_boundary
        self.crf = CRF(num_tags, batch_first=True)
        self.emission = nn.Embedding(vocab_size, num_tags)
        with torch.no_grad():
            for p in (*self.crf.parameters(), *self.emission.parameters()):
                p.zero_()
        if freeze_boundary:
            self.crf.start_transitions.requires_grad_(False)
            self.crf.end_transitions.requires_grad_(False)
        self.fit_info: FitInfo | None = None

    def extra_repr(self) -> str:
        return (
            f"num_tags={self.num_tags}, vocab_size={self.vocab_size}, "
            f"freeze_boundary={self.freeze_boundary}"
        )

    def potentials(
        self, words: Tensor, mask: Tensor | None = None
    ) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """Log potentials ``(emissions [B, T, K], transitions [K, K], start [K], end [K])``."""
        return self._checked_potentials(words, mask)[1]

    def _checked_potentials(self, words: Tensor, mask: Tensor | None):
        mask = check_words(words, mask, self.vocab_size)
        return mask, self._potentials(words, mask)

    def _potentials(self, words: Tensor, mask: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        crf = self.crf
        return self.emission(words), crf.transitions, crf.start_transitions, crf.end_transitions

    def log_likelihood(self, words: Tensor, tags: Tensor, mask: Tensor | None = None) -> Tensor:
        """``log P(tags | words)`` per sentence, ``[B]``, by pytorch-crf's ``CRF.forward``."""
        mask = check_words(words, mask, self.vocab_size, tags, self.num_tags)
        return self.crf(self.emission(words), tags, mask=mask, reduction="none")

    def negative_log_likelihood(
        self, words: Tensor, tags: Tensor, mask: Tensor | None = None
    ) -> Tensor:
        """``-log P(tags | words)`` per sentence, ``[B]``, via linear_chain's scaled forward.

        Equal to ``-log_likelihood`` (a test holds them together) but several times
        faster: a ``[B, K] @ [K, K]`` product per step instead of a ``[B, K, K]``
        log-sum-exp. Differentiable.
        """
        mask = check_words(words, mask, self.vocab_size, tags, self.num_tags)
        return self._nll(words, tags, mask, None)

    def _nll(self, words: Tensor, tags: Tensor, mask: Tensor, flags: list[Tensor] | None):
        """Unchecked NLL; ``flags`` defers the forward-backward's precision checks."""
        emissions, trans, start, end = self._potentials(words, mask)
        log_z = linear_chain.log_partition(
            emissions, trans, start, end, mask, validate_args=False, precision_flags=flags
        )
        score = linear_chain.sequence_score(
            emissions, trans, start, end, tags, mask, validate_args=False
        )
        return log_z - score

    def l2_penalty(self) -> Tensor:
        """``||w||^2`` over the trained weights (frozen start/end scores excluded)."""
        squares = [p.pow(2).sum() for p in self.parameters() if p.requires_grad]
        if not squares:
            return self.crf.transitions.new_zeros(())
        return torch.stack(squares).sum()

    def fit(
        self,
        words: Tensor,
        tags: Tensor,
        mask: Tensor | None = None,
        *,
        c2: float = 1.0,
        max_iter: int = 200,
        tol: float = 1e-5,
        tolerance_change: float = 1e-9,
        history_size: int = 10,
        max_tokens: int = 8192,
        dtype: torch.dtype = torch.float64,
        progress: bool = True,
    ) -> CRFTagger:
        """Minimise ``sum_n NLL_n + c2 * ||w||^2`` full-batch with L-BFGS (strong Wolfe).

        The objective is CRFsuite's (``c2`` multiplies the squared norm, no 1/2).
        Sentences are sorted by length and processed in chunks of at most
        ``max_tokens`` padded positions, so that padding stays small and each chunk fits
        in cache; gradients accumulate over the chunks, so each
        L-BFGS evaluation is one exact full-batch objective and gradient. Training
        runs in ``dtype`` (the module is cast back to its dtype afterwards).

        The batch is checked once, here. An objective evaluation then makes one host
        synchronisation of its own, whatever the number of chunks: the forward-backward
        passes' precision checks, collected on the device and read together (if any
        failed, the evaluation is redone on the exact log-space path). ``progress=True``
        adds one (the objective shown on the bar); ``torch.optim.LBFGS`` makes its own.

        Args:
            words, tags, mask: the padded training batch (``[B, T]``).
            c2: L2 strength (>= 0).
            max_iter: maximum L-BFGS iterations.
            tol: stop when the largest absolute gradient entry is below this.
            tolerance_change: stop when the objective or the step changes less than this.
            history_size: L-BFGS memory.
            max_tokens: padded positions per chunk of the objective's evaluation.
            dtype: training dtype (float64 recommended).
            progress: show a tqdm bar of objective evaluations on stderr.

        Returns:
            ``self``, with :attr:`fit_info` set.
        """
        _check_fit_options(c2, max_iter, max_tokens)
        mask = check_words(words, mask, self.vocab_size, tags, self.num_tags)
        chunks = [
            (words[idx, :width], tags[idx, :width], mask[idx, :width])
            for idx, width in length_chunks(mask.sum(1), max_tokens)
        ]
        original_dtype = self.crf.transitions.dtype
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
        self.fit_info = self._finish(optimizer, params, chunks, c2, n_evals, begin)
        self.to(original_dtype)
        self.zero_grad(set_to_none=True)
        return self

    def _objective(self, chunks, c2: float) -> Tensor:
        """Full-batch objective with its gradient accumulated in ``.grad``.

        One host synchronisation: the precision flags of every chunk, read at once.
        """
        total = self._accumulate(chunks, c2, flags := [])
        if flags and bool(torch.stack(flags).any()):
            # Scores extreme enough for the rescaled recursion to lose precision: redo
            # every chunk on the checked path, which falls back to log space where needed.
            total = self._accumulate(chunks, c2, None)
        return total

    def _accumulate(self, chunks, c2: float, flags: list[Tensor] | None) -> Tensor:
        for p in self.parameters():
            p.grad = None
        total = self.crf.transitions.new_zeros(())
        for w, t, m in chunks:
            loss = self._nll(w, t, m, flags).sum()
            loss.backward()
            total = total + loss.detach()
        if c2 > 0:
            penalty = c2 * self.l2_penalty()
            penalty.backward()
            total = total + penalty.detach()
        return total

    def _minimise(self, optimizer, chunks, c2: float, progress: bool) -> int:
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
        n_evals += 1
        grad_max = float(torch.stack([p.grad.abs().max() for p in params]).max())
        max_iter, max_eval = (optimizer.defaults[k] for k in ("max_iter", "max_eval"))
        tol = optimizer.defaults["tolerance_grad"]
        return FitInfo(
            objective=final,
            n_evals=n_evals,
            n_iter=n_iter,
            converged=grad_max <= tol or (n_iter < max_iter and n_evals - 1 < max_eval),
            seconds=time.perf_counter() - begin,
        )


def _check_fit_options(c2: float, max_iter: int, max_tokens: int) -> None:
    if not c2 >= 0:
        raise ValueError(f"c2 must be >= 0, got {c2}")
    if isinstance(max_iter, bool) or not isinstance(max_iter, int) or max_iter < 1:
        raise ValueError(f"max_iter must be a positive int, got {max_iter!r}")
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise ValueError(f"max_tokens must be a positive int, got {max_tokens!r}")
