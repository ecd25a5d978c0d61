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

from calib_metrics.functional.errors import check_dense_tensors, check_not_meta
from calib_metrics.models import linear_chain
from calib_metrics.models.chain_fit import LBFGSFit, check_c2
from calib_metrics.models.chain_tagger import (
    ChainTagger,
    CheckedBatch,
    check_sizes,
    checked_mask,
    checked_tags,
)
from calib_metrics.models.linear_chain import as_indices

__all__ = ["FeatureCRF", "check_features"]


def check_features(
    features: Tensor,
    mask: Tensor | None,
    num_features: int,
    tags: Tensor | None = None,
    num_tags: int | None = None,
    *,
    fitting: bool = False,
) -> CheckedBatch:
    """Validate a padded batch of feature-id bags ``[B, T, F]`` (and gold tags), as
    :func:`~calib_metrics.models.chain_tagger.check_words` does a batch of words: ids of
    any integer dtype, checked only where ``mask`` is True (padding may hold anything, and
    comes back as id 0, which has no weight), ``tags`` required given ``num_tags``, a
    sentence at least when ``fitting``; one host synchronisation for the value checks.

    Example:
        >>> batch = check_features(torch.tensor([[[3, 0], [-100, -100]]]), None, 8)
        Traceback (most recent call last):
        ...
        ValueError: feature ids must lie in [0, 8) where mask is True
        >>> batch = check_features(torch.tensor([[[3, 0], [-100, -100]]]),
        ...                        torch.tensor([[True, False]]), 8)
        >>> batch.words.tolist(), batch.mask.tolist()
        ([[[3, 0], [0, 0]]], [[True, False]])
    """
    # Before any shape is read (a strided nested tensor has none), as check_words does.
    check_dense_tensors(
        features=features, mask=mask, **({} if num_tags is None else {"tags": tags})
    )
    if not isinstance(features, Tensor) or features.dim() != 3:
        shape = tuple(features.shape) if isinstance(features, Tensor) else type(features).__name__
        raise ValueError(f"features must be a [B, T, F] tensor of ids, got shape {shape}")
    check_not_meta(features, "features")
    features = as_indices(features, "features")
    batch, length, slots = features.shape
    if length == 0 or slots == 0 or (batch == 0 and fitting):
        # As linear_chain refuses T = 0, and check_words B = 0 in a fit (a batch of no
        # sentences gives empty results at inference and empty likelihoods), in the words
        # of this argument; F = 0 had failed inside EmbeddingBag's reshape.
        raise ValueError(
            "features must be [B, T, F] with B, T, F >= 1 (a sentence of a token at least, "
            f"a feature slot per token: pad a bag with id 0), got shape {tuple(features.shape)}"
        )
    mask_given = mask is not None
    mask = checked_mask(mask, features.shape[:2], features.device)
    flags = [*linear_chain.mask_flags(mask)]
    mask = mask.bool()
    outside = (features < 0) | (features >= num_features)
    flags.append((outside.any(-1) & mask).any())
    if num_tags is not None:
        tags = checked_tags(tags, features.shape[:2])
        flags.append(linear_chain.tags_outside(tags, mask, num_tags).any())
    not_binary, first_missing, hole, bad_id, *bad_tag = torch.stack(flags).tolist()
    given = "tags, mask" if num_tags is not None else "mask=mask"
    hint = linear_chain.left_align_hint(f"features, {given}")
    linear_chain.check_mask_flags(not_binary, first_missing, hole, hint)
    if bad_id:
        raise ValueError(f"feature ids must lie in [0, {num_features}) where mask is True")
    if num_tags is not None:
        linear_chain.check_tag_range(tags, mask, num_tags, mask_given, outside=bad_tag[0])
    # Once here, not at every evaluation of a fit: the padding's ids become id 0.
    features = features.masked_fill(~mask[..., None], 0)
    return CheckedBatch(features, mask, None if num_tags is None else tags)


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
        num_tags, num_features = check_sizes(
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

    def _emissions(self, features: Tensor, mask: Tensor) -> Tensor:
        """Emissions of checked features, whose padding holds id 0 (:func:`check_features`)."""
        batch, length, slots = features.shape
        return self.weights(features.reshape(-1, slots)).view(batch, length, self.num_tags)

    def potentials(
        self, features: Tensor, mask: Tensor | None = None
    ) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """Log potentials ``(emissions [B, T, K], transitions [K, K], start [K], end [K])``."""
        return self._checked_potentials(features, mask)[1]

    def _checked_potentials(self, features: Tensor, mask: Tensor | None):
        self._check_materialised()
        features, mask, _ = check_features(features, mask, self.num_features)
        crf = self.crf
        emissions = self._emissions(features, mask)
        return mask, (emissions, crf.transitions, crf.start_transitions, crf.end_transitions)

    def log_likelihood(self, features: Tensor, tags: Tensor, mask: Tensor | None = None) -> Tensor:
        """``log P(tags | x)`` per sentence, ``[B]``, by pytorch-crf's ``CRF.forward``
        (empty for a batch of no sentences, ``B = 0``: a dev loss over
        :func:`~calib_metrics.models.left_align`'s batches runs through one of padding
        rows alone)."""
        features, mask, tags = self._check_batch(features, tags, mask)
        # pytorch-crf indexes every position's tag: padding may hold an ignore index.
        tags = tags.masked_fill(~mask, 0)
        return self.crf(self._emissions(features, mask), tags, mask=mask, reduction="none")

    def _nll(
        self, features: Tensor, tags: Tensor, mask: Tensor, flags: list[Tensor] | None = None
    ) -> Tensor:
        # linear_chain's scaled forward: equal to -log_likelihood, several times faster;
        # ``flags`` defers its precision checks (see LBFGSFit._objective).
        emissions = self._emissions(features, mask)
        crf = self.crf
        args = (emissions, crf.transitions, crf.start_transitions, crf.end_transitions)
        log_z = linear_chain.log_partition(*args, mask, validate_args=False, precision_flags=flags)
        return log_z - linear_chain.sequence_score(*args, tags, mask, validate_args=False)

    def objective(self, features: Tensor, tags: Tensor, mask: Tensor | None, c2: float) -> Tensor:
        """CRFsuite's training objective ``sum_n NLL_n + c2 * ||w||^2`` (differentiable; a
        batch of no sentences, ``B = 0``, sums to the penalty alone)."""
        check_c2(c2)  # as fit does: a negative c2 rewards large weights
        features, mask, tags = self._check_batch(features, tags, mask)
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

        A batch of no sentences (``B = 0``) is refused: there is nothing to fit.
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
        features, mask, tags = self._check_batch(features, tags, mask, fitting=True)
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
        self, features: Tensor, tags: Tensor | None, mask: Tensor | None, fitting: bool = False
    ) -> CheckedBatch:
        """``(features, mask, tags)``: ids as int64, the mask as bool, tags required (and a
        sentence, when ``fitting``)."""
        self._check_materialised()
        return check_features(
            features, mask, self.num_features, tags, self.num_tags, fitting=fitting
        )
