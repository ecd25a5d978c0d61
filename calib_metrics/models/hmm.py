"""A first-order hidden Markov model tagger fitted in closed form (Dirichlet MAP).

The HMM is the generative half of the paper's §4.2 comparison: tag-tag transitions
(with start and stop), and tag-word emissions, each a categorical distribution whose
MAP estimate under a symmetric Dirichlet prior is ``(count + pseudocount) /
(total + n_outcomes * pseudocount)``. Its posterior over tag sequences is a linear
chain whose log potentials are the log probabilities, so marginals, Viterbi and
samples all come from :mod:`calib_metrics.models.linear_chain`.
"""

from __future__ import annotations

import math
import numbers

import torch
from torch import Tensor

from calib_metrics.models import linear_chain
from calib_metrics.models.chain_tagger import ChainTagger, check_sizes, check_words


class HMM(ChainTagger):
    """HMM tagger with Dirichlet-MAP estimates and an unknown-word column.

    Parameters are log probabilities, stored as buffers (the model is fitted by
    counting, not by gradient descent): ``log_start [K]``, ``log_transitions [K, K]``,
    ``log_end [K]`` (the probability of stopping after a tag; each row of
    ``exp(log_transitions)`` plus ``exp(log_end)`` sums to 1) and ``log_emissions [K, V]``.
    Word index 0 is the unknown word: test words outside the training vocabulary map
    to it, and its emission probability is whatever the training counts (if any) and
    the pseudocount give it.

    Args:
        num_tags: number of tags ``K``.
        vocab_size: number of word indices ``V``, the unknown word (index 0) included.
        pseudocount: Dirichlet MAP pseudocount added to every start, transition, stop
            and emission count (> 0).

    Example:
        >>> words = torch.tensor([[1, 2], [1, 0]])
        >>> tags = torch.tensor([[0, 1], [0, 0]])
        >>> mask = torch.tensor([[True, True], [True, False]])
        >>> hmm = HMM(num_tags=2, vocab_size=3, pseudocount=1.0).fit(words, tags, mask)
        >>> hmm.log_start.exp()
        tensor([0.7500, 0.2500])
        >>> hmm.viterbi(words, mask)[1]
        tensor([[0, 1],
                [0, 0]])
        >>> hmm.marginals(words, mask).unigram.sum(-1)
        tensor([[1., 1.],
                [1., 0.]])
    """

    log_start: Tensor
    log_transitions: Tensor
    log_end: Tensor
    log_emissions: Tensor

    def __init__(self, num_tags: int, vocab_size: int, pseudocount: float = 1.0):
        super().__init__()
        num_tags, vocab_size = check_sizes(num_tags, vocab_size)
        # Any real number (numpy's too), not a bool.
        valid = isinstance(pseudocount, numbers.Real) and not isinstance(pseudocount, bool)
        if not valid or not 0 < pseudocount < math.inf:
            raise ValueError(f"pseudocount must be a finite number > 0, got {pseudocount!r}")
        self.num_tags = num_tags
        self.vocab_size = vocab_size
        self.pseudocount = float(pseudocount)
        # Before fitting the model is uniform; buffers follow .to(device) and state_dict.
        # Python floats, not 0-d tensors: under torch.device("meta") a tensor fill value
        # had been read with .item(), and the model could not be built there.
        k, v = num_tags, vocab_size
        self.register_buffer("log_start", torch.full((k,), -math.log(k)))
        self.register_buffer("log_transitions", torch.full((k, k), -math.log(k + 1)))
        self.register_buffer("log_end", torch.full((k,), -math.log(k + 1)))
        self.register_buffer("log_emissions", torch.full((k, v), -math.log(v)))

    def extra_repr(self) -> str:
        return (
            f"num_tags={self.num_tags}, vocab_size={self.vocab_size}, "
            f"pseudocount={self.pseudocount}"
        )

    @torch.no_grad()
    def fit(self, words: Tensor, tags: Tensor, mask: Tensor | None = None) -> HMM:
        """Set the parameters to the Dirichlet MAP estimate from a padded, tagged batch.

        One pass of counting over all sentences at once (``bincount`` on flat indices),
        on the inputs' device; the parameters stay on the model's device (a model on the
        meta device, which holds no values yet, gets them on the inputs'). A batch of no
        sentences (``B = 0``) is refused: there is nothing to count. Returns ``self``.
        """
        words, mask, tags = check_words(
            words, mask, self.vocab_size, tags, self.num_tags, fitting=True
        )
        k, v = self.num_tags, self.vocab_size
        gold = tags[mask]
        # Counts and their ratios in the widest float, cast to the model's dtype at the
        # end: a float16 count overflows past 65,504 (inf / inf is NaN) and bfloat16
        # rounds counts past 256.
        dtype = linear_chain.default_compute_dtype(words.device)
        lengths = mask.sum(1)
        last = tags.gather(1, (lengths - 1).clamp(min=0)[:, None]).squeeze(1)
        both = mask[:, :-1] & mask[:, 1:]
        start = torch.bincount(tags[:, 0], minlength=k).to(dtype)
        end = torch.bincount(last, minlength=k).to(dtype)
        trans = torch.bincount((tags[:, :-1] * k + tags[:, 1:])[both], minlength=k * k)
        trans = trans.to(dtype).view(k, k)
        emit = torch.bincount(gold * v + words[mask], minlength=k * v).to(dtype).view(k, v)

        a = self.pseudocount
        place = self.log_start.device
        model_place = {
            "dtype": self.log_start.dtype,
            "device": place if place.type != "meta" else None,
        }
        self.log_start = torch.log((start + a) / (start.sum() + k * a)).to(**model_place)
        # A tag's successors are the K tags and the stop event: one categorical.
        row_total = trans.sum(1) + end + (k + 1) * a
        self.log_transitions = torch.log((trans + a) / row_total[:, None]).to(**model_place)
        self.log_end = torch.log((end + a) / row_total).to(**model_place)
        self.log_emissions = torch.log((emit + a) / (emit.sum(1, keepdim=True) + v * a)).to(
            **model_place
        )
        return self

    def potentials(
        self, words: Tensor, mask: Tensor | None = None
    ) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """Log potentials ``(emissions [B, T, K], transitions [K, K], start [K], end [K])``.

        In :mod:`~calib_metrics.models.linear_chain`'s convention, so that the chain's
        score of a tag sequence is the HMM's joint ``log P(x, y)`` and its ``log Z`` is
        ``log P(x)``. Padding positions get emission 0.
        """
        return self._checked_potentials(words, mask)[1]

    def _checked_potentials(self, words: Tensor, mask: Tensor | None):
        self._check_materialised()
        words, mask, _ = check_words(words, mask, self.vocab_size)
        return mask, self._potentials(words, mask)

    def _potentials(self, words: Tensor, mask: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        # Padding may hold any index (an ignore index): look up word 0 there.
        emissions = self.log_emissions.t()[words.masked_fill(~mask, 0)]  # [B, T, K]
        emissions = emissions.masked_fill(~mask[..., None], 0.0)
        return emissions, self.log_transitions, self.log_start, self.log_end

    def log_likelihood(self, words: Tensor, mask: Tensor | None = None) -> Tensor:
        """Marginal log likelihood ``log P(x)`` of each sentence, ``[B]`` (empty for a batch
        of no sentences, ``B = 0``)."""
        self._check_materialised()
        words, mask, _ = check_words(words, mask, self.vocab_size)
        emissions, trans, start, end = self._potentials(words, mask)
        return linear_chain.log_partition(emissions, trans, start, end, mask)
