"""A linear-chain CRF over sparse observation features (the thesis' CRF-Advanced, §4.1.2).

Each token carries a bag of feature ids (hashed attributes, see
:mod:`calib_metrics.models.features`); its emission score for tag ``k`` is the sum of
the weights ``W[f, k]`` of its features, which :class:`torch.nn.EmbeddingBag` computes
in one call (``mode="sum"``, id 0 the padding). Tag-tag, start and end scores live in
pytorch-crf's :class:`torchcrf.CRF`. With the single template ``word`` the model is
the CRF-Basic of the paper (:class:`~calib_metrics.models.crf.CRFTagger`).

Training minimises CRFsuite's objective ``sum_n NLL_n + c2 * ||w||^2`` with full-batch
L-BFGS rather than the thesis' mini-batch AdaGrad: the objective is convex and the
corpora here are small (tens of thousands of tokens), so full batch converges to the
optimum in a few hundred evaluations without a learning-rate schedule to tune, and
the optimum is the one CRFsuite finds, which the tests check. Inference runs on
:mod:`calib_metrics.models.linear_chain`.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn
from torchcrf import CRF

from calib_metrics.models import linear_chain
from calib_metrics.models.chain_fit import LBFGSFit
from calib_metrics.models.chain_tagger import ChainTagger, check_sizes
from calib_metrics.models.linear_chain import as_indices

__all__ = ["FeatureCRF"]


def _check_features(
    features: Tensor, mask: Tensor | None, num_features: int
) -> tuple[Tensor, Tensor]:
    """``(features as int64, mask as bool)``."""
    if not isinstance(features, Tensor) or features.dim() != 3:
        shape = tuple(features.shape) if isinstance(features, Tensor) else type(features)
        raise ValueError(f"features must be a [B, T, F] tensor of ids, got shape {shape}")
    features = as_indices(features, "features")
    if mask is None:
        mask = torch.ones(features.shape[:2], dtype=torch.bool, device=features.device)
    elif not isinstance(mask, Tensor) or mask.shape != features.shape[:2]:
        shape = tuple(mask.shape) if isinstance(mask, Tensor) else type(mask).__name__
        raise ValueError(f"mask must be a tensor of shape {tuple(features.shape[:2])}, got {shape}")
    linear_chain.check_mask_dtype(mask)
    linear_chain.check_mask_flags(*linear_chain.mask_flags(mask).tolist())
    mask = mask.bool()
    if features.numel() and (features.min() < 0 or features.max() >= num_features):
        raise ValueError(f"feature ids must lie in [0, {num_features})")
    return features, mask


class FeatureCRF(LBFGSFit, ChainTagger):
    """First-order CRF whose emissions are sums of per-feature, per-tag weights.

    ``score(x, y) = start[y_0] + sum_t (sum_{f in x_t} W[f, y_t] + A[y_{t-1}, y_t]) + end[y_L]``.

    Args:
        num_tags: number of tags ``K``.
        num_features: number of feature ids (id 0 is padding and has no weight), e.g.
            the hasher's ``num_buckets``.
        freeze_boundary: keep the start and end scores at 0 and out of training
            (CRFsuite's model, which has no start/end features).

    Example:
        >>> from calib_metrics.models.features import FeatureHasher
        >>> hasher = FeatureHasher(["bias", "word", "affixes"], num_buckets=512)
        >>> ids, mask = hasher.encode([["the", "dog", "runs"], ["a", "cat"]])
        >>> tags = torch.tensor([[0, 1, 2], [0, 1, 0]])
        >>> crf = FeatureCRF(num_tags=3, num_features=512).fit(ids, tags, mask, c2=0.01)
        >>> crf.viterbi(ids, mask)[1][mask].tolist()
        [0, 1, 2, 0, 1]
        >>> crf(ids, mask).shape
        torch.Size([2, 3, 3])
    """

    def __init__(self, num_tags: int, num_features: int, *, freeze_boundary: bool = False):
        super().__init__()
        check_sizes(
            num_tags, num_features, vocab_name="num_features", least=2, reserved="id 0 is padding"
        )
        self.num_tags = num_tags
        self.num_features = num_features
        self.freeze_boundary = freeze_boundary
        self.crf = CRF(num_tags, batch_first=True)
        self.weights = nn.EmbeddingBag(num_features, num_tags, mode="sum", padding_idx=0)
        self._start_at_zero(freeze_boundary)

    def extra_repr(self) -> str:
        return (
            f"num_tags={self.num_tags}, num_features={self.num_features}, "
            f"freeze_boundary={self.freeze_boundary}"
        )

    def _emissions(self, features: Tensor) -> Tensor:
        batch, length, slots = features.shape
        return self.weights(features.reshape(-1, slots)).view(batch, length, self.num_tags)

    def potentials(
        self, features: Tensor, mask: Tensor | None = None
    ) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """Log potentials ``(emissions [B, T, K], transitions [K, K], start [K], end [K])``."""
        features, _ = _check_features(features, mask, self.num_features)
        crf = self.crf
        return (
            self._emissions(features),
            crf.transitions,
            crf.start_transitions,
            crf.end_transitions,
        )

    def log_likelihood(self, features: Tensor, tags: Tensor, mask: Tensor | None = None) -> Tensor:
        """``log P(tags | x)`` per sentence, ``[B]``, by pytorch-crf's ``CRF.forward``."""
        features, tags, mask = self._check_batch(features, tags, mask)
        # pytorch-crf indexes every position's tag: padding may hold an ignore index.
        tags = tags.masked_fill(~mask, 0)
        return self.crf(self._emissions(features), tags, mask=mask, reduction="none")

    def _nll(
        self, features: Tensor, tags: Tensor, mask: Tensor, flags: list[Tensor] | None = None
    ) -> Tensor:
        # linear_chain's scaled forward: equal to -log_likelihood, several times faster;
        # ``flags`` defers its precision checks (see LBFGSFit._objective).
        emissions = self._emissions(features)
        crf = self.crf
        args = (emissions, crf.transitions, crf.start_transitions, crf.end_transitions)
        log_z = linear_chain.log_partition(*args, mask, validate_args=False, precision_flags=flags)
        return log_z - linear_chain.sequence_score(*args, tags, mask, validate_args=False)

    def objective(self, features: Tensor, tags: Tensor, mask: Tensor | None, c2: float) -> Tensor:
        """CRFsuite's training objective ``sum_n NLL_n + c2 * ||w||^2`` (differentiable)."""
        features, tags, mask = self._check_batch(features, tags, mask)
        return self._nll(features, tags, mask).sum() + c2 * self.l2_penalty()

    def fit(
        self,
        features: Tensor,
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
    ) -> FeatureCRF:
        """Minimise ``sum_n NLL_n + c2 * ||w||^2`` full-batch with L-BFGS (strong Wolfe).

        Sentences are processed in length-sorted chunks of at most ``max_tokens``
        padded positions; gradients accumulate over chunks, so every evaluation is the
        exact full-batch objective. Training runs in ``dtype`` and the module is cast
        back afterwards; :attr:`fit_info` records the final objective, the rule that stopped
        the fit and whether the gradient test passed.

        Args:
            features, tags, mask: the padded training batch (``[B, T, F]``, ``[B, T]``).
            c2: L2 strength (>= 0), multiplying the squared norm (no 1/2), as in CRFsuite.
            max_iter: maximum L-BFGS iterations.
            tol: stop when the largest absolute gradient entry is at most this; only
                this stop sets ``fit_info.converged``.
            tolerance_change: stop when the objective or the step changes less than this
                (``fit_info.stopped_by == "change"``; ``fit_info.max_grad`` then says how
                far from the optimum the steps stalled).
            history_size: L-BFGS memory (each entry holds two copies of the weights).
            max_tokens: padded positions per chunk.
            dtype: training dtype (float64 recommended).
        """
        features, tags, mask = self._check_batch(features, tags, mask)
        self.fit_info = self._fit_lbfgs(
            features,
            tags,
            mask,
            c2=c2,
            max_iter=max_iter,
            tol=tol,
            tolerance_change=tolerance_change,
            history_size=history_size,
            max_tokens=max_tokens,
            dtype=dtype,
        )
        return self

    def _check_batch(
        self, features: Tensor, tags: Tensor, mask: Tensor | None
    ) -> tuple[Tensor, Tensor, Tensor]:
        """``(features, tags, mask)``: ids as int64, the mask as bool."""
        features, mask = _check_features(features, mask, self.num_features)
        if not isinstance(tags, Tensor) or tags.shape != features.shape[:2]:
            shape = tuple(tags.shape) if isinstance(tags, Tensor) else type(tags).__name__
            raise ValueError(
                f"tags must be a tensor of shape {tuple(features.shape[:2])}, got {shape}"
            )
        tags = as_indices(tags, "tags")
        gold = tags[mask]
        if gold.numel() and (gold.min() < 0 or gold.max() >= self.num_tags):
            raise ValueError(f"tags must lie in [0, {self.num_tags}) where mask is True")
        return features, tags, mask
