"""What every linear-chain tagger offers once it can score a sentence.

A tagger subclasses :class:`ChainTagger` and implements ``potentials(words, mask)``,
returning ``(emissions [B, T, K], transitions [K, K], start [K], end [K])`` in
:mod:`~calib_metrics.models.linear_chain`'s convention; marginals, Viterbi paths and
posterior samples then come from the one shared forward-backward core.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from calib_metrics.models import linear_chain
from calib_metrics.models.linear_chain import ChainMarginals


class ChainTagger(nn.Module):
    """Base class of the HMM and CRF taggers (inference only; no parameters here)."""

    def potentials(self, words: Tensor, mask: Tensor | None = None) -> tuple[Tensor, ...]:
        raise NotImplementedError

    @torch.no_grad()
    def marginals(
        self, words: Tensor, mask: Tensor | None = None, *, pairwise: bool = True
    ) -> ChainMarginals:
        """Posterior marginals ``P(y_t | x)`` (and ``P(y_t, y_{t+1} | x)``) by forward-backward."""
        emissions, trans, start, end = self.potentials(words, mask)
        return linear_chain.posterior_marginals(
            emissions, trans, start, end, mask, pairwise=pairwise
        )

    @torch.no_grad()
    def viterbi(self, words: Tensor, mask: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """Most probable tag sequences: ``(score [B], tags [B, T])``."""
        emissions, trans, start, end = self.potentials(words, mask)
        return linear_chain.viterbi(emissions, trans, start, end, mask)

    @torch.no_grad()
    def sample(
        self,
        words: Tensor,
        mask: Tensor | None = None,
        *,
        n_samples: int,
        generator: torch.Generator | None = None,
    ) -> Tensor:
        """Exact posterior samples of tag sequences, ``Long [S, B, T]``."""
        emissions, trans, start, end = self.potentials(words, mask)
        return linear_chain.sample(
            emissions, trans, start, end, mask, n_samples=n_samples, generator=generator
        )

    def forward(self, words: Tensor, mask: Tensor | None = None) -> Tensor:
        """Unigram posterior marginals ``[B, T, K]`` (what the calibration metric consumes)."""
        return self.marginals(words, mask, pairwise=False).unigram
