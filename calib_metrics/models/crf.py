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

import torch
from torch import Tensor, nn
from torchcrf import CRF

from calib_metrics.models import linear_chain
from calib_metrics.models.chain_fit import FitInfo, LBFGSFit, length_chunks
from calib_metrics.models.chain_tagger import ChainTagger, check_sizes, check_words

__all__ = ["CRFTagger", "FitInfo", "length_chunks"]  # the last two live in chain_fit


class CRFTagger(LBFGSFit, ChainTagger):
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
        num_tags, vocab_size = check_sizes(num_tags, vocab_size)
        self.num_tags = num_tags
        self.vocab_size = vocab_size
        self.freeze_boundary = freeze_boundary
        self.crf = CRF(num_tags, batch_first=True)
        self.emission = nn.Embedding(vocab_size, num_tags)
        self._start_at_zero(freeze_boundary)

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
        self._check_materialised()
        words, mask, _ = check_words(words, mask, self.vocab_size)
        return mask, self._potentials(words, mask)

    def _potentials(self, words: Tensor, mask: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        crf = self.crf
        # Padding may hold any index (an ignore index): look up word 0 there.
        emissions = self.emission(words.masked_fill(~mask, 0))
        return emissions, crf.transitions, crf.start_transitions, crf.end_transitions

    def log_likelihood(self, words: Tensor, tags: Tensor, mask: Tensor | None = None) -> Tensor:
        """``log P(tags | words)`` per sentence, ``[B]``, by pytorch-crf's ``CRF.forward``
        (empty for a batch of no sentences, ``B = 0``: a dev loss over
        :func:`~calib_metrics.models.left_align`'s batches runs through one of padding
        rows alone)."""
        self._check_materialised()
        words, mask, tags = check_words(words, mask, self.vocab_size, tags, self.num_tags)
        # pytorch-crf indexes every position's tag: padding may hold an ignore index.
        tags = tags.masked_fill(~mask, 0)
        emissions = self._potentials(words, mask)[0]
        return self.crf(emissions, tags, mask=mask, reduction="none")

    def negative_log_likelihood(
        self, words: Tensor, tags: Tensor, mask: Tensor | None = None
    ) -> Tensor:
        """``-log P(tags | words)`` per sentence, ``[B]``, via linear_chain's scaled forward.

        Equal to ``-log_likelihood`` (a test holds them together) but several times
        faster: a ``[B, K] @ [K, K]`` product per step instead of a ``[B, K, K]``
        log-sum-exp. Differentiable. Empty for a batch of no sentences (``B = 0``).
        """
        self._check_materialised()
        words, mask, tags = check_words(words, mask, self.vocab_size, tags, self.num_tags)
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

        The batch is checked once, here; one of no sentences (``B = 0``) is refused, there
        being nothing to fit. An objective evaluation then makes one host
        synchronisation of its own, whatever the number of chunks: the forward-backward
        passes' precision checks, collected on the device and read together (if any
        failed, the evaluation is redone on the exact log-space path). ``progress=True``
        adds one (the objective shown on the bar); ``torch.optim.LBFGS`` makes its own.

        Args:
            words, tags, mask: the padded training batch (``[B, T]``).
            c2: L2 strength (>= 0).
            max_iter: maximum L-BFGS iterations.
            tol: stop when the largest absolute gradient entry is at most this; only
                this stop sets ``fit_info.converged``.
            tolerance_change: stop when the objective or the step changes less than this
                (``fit_info.stopped_by == "change"``; ``fit_info.max_grad`` then says how
                far from the optimum the steps stalled).
            history_size: L-BFGS memory.
            max_tokens: padded positions per chunk of the objective's evaluation.
            dtype: training dtype (float64 recommended).
            progress: show a tqdm bar of objective evaluations on stderr.

        Returns:
            ``self``, with :attr:`fit_info` set.
        """
        self._check_materialised()
        words, mask, tags = check_words(
            words, mask, self.vocab_size, tags, self.num_tags, fitting=True
        )
        self.fit_info = self._fit_lbfgs(
            words,
            tags,
            mask,
            c2=c2,
            max_iter=max_iter,
            tol=tol,
            tolerance_change=tolerance_change,
            history_size=history_size,
            max_tokens=max_tokens,
            dtype=dtype,
            progress=progress,
        )
        return self
