"""What every linear-chain tagger offers once it can score a sentence.

A tagger subclasses :class:`ChainTagger` and implements ``potentials(words, mask)``,
returning ``(emissions [B, T, K], transitions [K, K], start [K], end [K])`` in
:mod:`~calib_metrics.models.linear_chain`'s convention; marginals, Viterbi paths and
posterior samples then check the batch once and run the one shared forward-backward core.
"""

from __future__ import annotations

import itertools
import operator
from typing import NamedTuple

import torch
from torch import Tensor, nn

from calib_metrics.functional.errors import check_dense_tensors, check_not_meta
from calib_metrics.models import linear_chain
from calib_metrics.models.linear_chain import ChainMarginals, as_indices


class CheckedBatch(NamedTuple):
    """A checked batch: words (and tags, if given) as int64, the mask as bool.

    Example:
        >>> batch = check_words(torch.tensor([[1, 2]], dtype=torch.uint8), None, vocab_size=4)
        >>> batch.words.dtype, batch.mask.tolist(), batch.tags
        (torch.int64, [[True, True]], None)
    """

    words: Tensor
    mask: Tensor
    tags: Tensor | None


def check_words(
    words: Tensor,
    mask: Tensor | None,
    vocab_size: int,
    tags: Tensor | None = None,
    num_tags: int | None = None,
    *,
    fitting: bool = False,
) -> CheckedBatch:
    """Validate a padded batch of word indices (and gold tags) of any integer dtype.

    Given ``num_tags``, gold ``tags`` are required (a likelihood or a fit); without it
    they are not read. A batch of no sentences (``B = 0``, what
    :func:`~calib_metrics.models.left_align` keeps of rows that are all padding) passes,
    for empty per-sentence results, unless ``fitting``: a fit has nothing to fit. Word and
    tag values in padding (where ``mask`` is False) may be anything, an ignore index say.
    The value checks are reduced on the device and read back together: one host
    synchronisation, made once at a tagger's public entry, never inside a training loop.

    Example:
        >>> batch = check_words(torch.tensor([[1, 2], [3, 0]], dtype=torch.uint8), None, 4)
        >>> batch.words.dtype, batch.mask.all().item(), batch.tags
        (torch.int64, True, None)
        >>> check_words(torch.tensor([[1, 2]]), None, 4, None, num_tags=2)
        Traceback (most recent call last):
        ...
        ValueError: tags are required: gold tags of shape (1, 2), got None
    """
    # Before any shape is read: a strided nested tensor has none, a sparse one fails later.
    check_dense_tensors(words=words, mask=mask, **({} if num_tags is None else {"tags": tags}))
    if not isinstance(words, Tensor) or words.dim() != 2:
        shape = tuple(words.shape) if isinstance(words, Tensor) else type(words).__name__
        raise ValueError(f"words must be [B, T], got shape {shape}")
    check_not_meta(words, "words")
    words = as_indices(words, "words")
    # T = 0 as linear_chain refuses it; B = 0 (no sentences, left_align's of empty rows)
    # gives empty results at inference and empty likelihoods, but nothing to fit.
    if words.shape[1] == 0 or (words.shape[0] == 0 and fitting):
        raise ValueError(
            f"words must be [B, T] with B, T >= 1 (a sentence of a token at least), "
            f"got shape {tuple(words.shape)}"
        )
    mask_given = mask is not None
    mask = checked_mask(mask, words.shape, words.device)
    # Inference would refuse a mask with a hole too; fit would count across it.
    flags = [*linear_chain.mask_flags(mask)]
    mask = mask.bool()
    flags.append(linear_chain.tags_outside(words, mask, vocab_size).any())
    if num_tags is not None:
        tags = checked_tags(tags, words.shape)
        flags.append(linear_chain.tags_outside(tags, mask, num_tags).any())
    not_binary, first_missing, hole, bad_word, *bad_tag = torch.stack(flags).tolist()
    given = "tags, mask" if num_tags is not None else "mask=mask"
    hint = linear_chain.left_align_hint(f"words, {given}")
    linear_chain.check_mask_flags(not_binary, first_missing, hole, hint)
    if bad_word:
        raise ValueError(f"word indices must lie in [0, {vocab_size}) where mask is True")
    if num_tags is not None:
        linear_chain.check_tag_range(tags, mask, num_tags, mask_given, outside=bad_tag[0])
    return CheckedBatch(words, mask, None if num_tags is None else tags)


def checked_mask(mask: Tensor | None, shape: torch.Size, device: torch.device) -> Tensor:
    """A tagger's mask, all True when ``None``, of the batch's ``[B, T]`` ``shape`` and a
    bool or integer dtype (its values are checked with :func:`linear_chain.mask_flags`).

    Example:
        >>> checked_mask(None, torch.Size([1, 2]), torch.device("cpu"))
        tensor([[True, True]])
    """
    if mask is None:
        return torch.ones(shape, dtype=torch.bool, device=device)
    if not isinstance(mask, Tensor) or mask.shape != shape:
        got = tuple(mask.shape) if isinstance(mask, Tensor) else type(mask).__name__
        raise ValueError(f"mask must be a tensor of shape {tuple(shape)}, got {got}")
    linear_chain.check_mask_dtype(mask)
    check_not_meta(mask, "mask")
    return mask


def checked_tags(tags: Tensor | None, shape: torch.Size) -> Tensor:
    """Gold tags as int64, present and of the batch's ``[B, T]`` ``shape``; their range is
    the caller's to check with the batch's other values (one host read for all).

    Example:
        >>> checked_tags(torch.tensor([[1, 0]], dtype=torch.uint8), torch.Size([1, 2]))
        tensor([[1, 0]])
    """
    if tags is None:
        # A likelihood or a fit without gold tags had failed deep inside (AttributeError).
        raise ValueError(f"tags are required: gold tags of shape {tuple(shape)}, got None")
    if not isinstance(tags, Tensor) or tags.shape != shape:
        got = tuple(tags.shape) if isinstance(tags, Tensor) else type(tags).__name__
        raise ValueError(f"tags must be a tensor of shape {tuple(shape)}, got {got}")
    check_not_meta(tags, "tags")
    return as_indices(tags, "tags")


def check_sizes(
    num_tags: int,
    vocab_size: int,
    *,
    vocab_name: str = "vocab_size",
    least: int = 1,
    reserved: str = "index 0 is the unknown word",
) -> tuple[int, int]:
    """A tagger's sizes as Python ints: ``num_tags`` >= 1, the vocabulary >= ``least``.
    Any integer is taken (a numpy one from ``tags.max() + 1`` had been refused as "must
    be an int"); a float or a bool is not.

    Example:
        >>> import numpy as np
        >>> check_sizes(np.int64(3), 5)
        (3, 5)
        >>> check_sizes(3, 2.5)
        Traceback (most recent call last):
        ...
        ValueError: vocab_size must be an int >= 1 (index 0 is the unknown word), got 2.5
    """
    sizes = []
    for name, value, minimum, why in (
        ("num_tags", num_tags, 1, ""),
        (vocab_name, vocab_size, least, f" ({reserved})"),
    ):
        size = _as_int(value)
        if size is None or size < minimum:
            raise ValueError(f"{name} must be an int >= {minimum}{why}, got {value!r}")
        sizes.append(size)
    return sizes[0], sizes[1]


def _as_int(value: object) -> int | None:
    """``value`` as a Python int when it is an integer of any kind (not a bool, not an
    integer-valued float or tensor of floats), else None."""
    if isinstance(value, bool) or (isinstance(value, Tensor) and value.dtype == torch.bool):
        return None
    try:
        return operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        return None


class ChainTagger(nn.Module):
    """Base class of the HMM and CRF taggers (inference only; no parameters here).

    A subclass implements ``potentials(words, mask)``, which checks its inputs. One that
    can split the check from the scoring (so that training loops skip it) overrides
    ``_checked_potentials`` instead, as the HMM and the CRF do with :func:`check_words`.
    """

    def _check_materialised(self) -> None:
        """ValueError naming the first parameter or buffer on the meta device: a model built
        under ``torch.device("meta")`` or moved there holds no values, and torch's own
        error came from deep inside the forward-backward."""
        for name, tensor in itertools.chain(self.named_parameters(), self.named_buffers()):
            check_not_meta(tensor, f"the model's {name}")

    def potentials(self, words: Tensor, mask: Tensor | None = None) -> tuple[Tensor, ...]:
        """Log potentials ``(emissions [B, T, K], transitions [K, K], start [K], end [K])``."""
        return self._checked_potentials(words, mask)[1]

    def _checked_potentials(
        self, words: Tensor, mask: Tensor | None
    ) -> tuple[Tensor | None, tuple[Tensor, ...]]:
        """``(mask, potentials)`` with the inputs checked once."""
        if type(self).potentials is ChainTagger.potentials:
            raise NotImplementedError("a ChainTagger implements potentials()")
        return mask, self.potentials(words, mask)

    @torch.no_grad()
    def marginals(
        self, words: Tensor, mask: Tensor | None = None, *, pairwise: bool = True
    ) -> ChainMarginals:
        """Posterior marginals ``P(y_t | x)`` (and ``P(y_t, y_{t+1} | x)``) by forward-backward."""
        mask, (emissions, trans, start, end) = self._checked_potentials(words, mask)
        return linear_chain.posterior_marginals(
            emissions, trans, start, end, mask, pairwise=pairwise
        )

    @torch.no_grad()
    def viterbi(self, words: Tensor, mask: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """Most probable tag sequences: ``(score [B], tags [B, T])``."""
        mask, (emissions, trans, start, end) = self._checked_potentials(words, mask)
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
        mask, (emissions, trans, start, end) = self._checked_potentials(words, mask)
        return linear_chain.sample(
            emissions, trans, start, end, mask, n_samples=n_samples, generator=generator
        )

    def forward(self, words: Tensor, mask: Tensor | None = None) -> Tensor:
        """Unigram posterior marginals ``[B, T, K]`` (what the calibration metric consumes)."""
        return self.marginals(words, mask, pairwise=False).unigram
