"""A log-linear antecedent-ranking coreference model (Durrett & Klein 2013, surface features).

Every mention ``i`` picks an antecedent ``a_i`` among the earlier mentions or NEW with
``P(a_i = j | x) ∝ exp(w · f(i, j))``, independently of the other mentions (the paper's
§5 and appendix 2). The scores fill the matrix of :mod:`calib_metrics.models.coref`
(``scores[i, j]`` for ``j < i``, NEW on the diagonal), so sampling, exact pairwise
marginals and 1-best clusters come from that module.

**Tensors are the input**: the model ranks antecedents among given mentions, each
document described by a :class:`DocumentFeatures` (hashed feature ids of every
candidate pair and of every mention's NEW action, gold entity ids for training). The
paper's surface features of a CoNLL-U corpus are built by
``calib_metrics.paper.coref_features.extract_features``; any other pipeline that
produces the same tensors works as well. The model does not detect mentions.

Candidate antecedents farther than
``max_distance`` mentions back get score ``-inf`` (probability exactly 0; the softmax of
:func:`~calib_metrics.models.coref.antecedent_log_probs` ignores them, and the NEW score
is always finite), which bounds the cost at ``O(N * max_distance)`` per document. Such
pairs can still corefer through a chain of nearer links.

Training maximises the marginal likelihood of the gold antecedents: for a mention whose
entity was mentioned within the window, the summed probability of all those earlier
mentions; for an entity's first mention (or one whose previous mentions all lie beyond
the window), the probability of NEW. An L2 penalty ``l2/2 * ||w||^2`` is added to the
mean per-mention negative log-likelihood, and Adagrad minimises the sum.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import Tensor, nn

from calib_metrics.functional.errors import (
    as_int,
    check_flag,
    check_generator,
    check_int,
    check_not_meta,
)
from calib_metrics.models.files import load_torch_file

__all__ = ["N_BITS_RANGE", "AntecedentRanker", "DocumentFeatures"]

_FORMAT_VERSION = 1
#: The hashed weights' log2 sizes a ranker takes: 16 to 2**30 weights (4 GiB of float32).
N_BITS_RANGE = (4, 30)


@dataclass
class DocumentFeatures:
    """Feature index tensors of one document: the ranker's input, built once per document.

    Attributes:
        n: number of mentions ``N``.
        pair_i, pair_j: ``Long [P]`` anaphor and candidate antecedent of every scored pair
            (``0 < i - j <= max_distance``).
        pair_feats: ``Int [P, Tp]`` hashed feature ids of each pair.
        new_feats: ``Int [N, Tn]`` hashed feature ids of each mention's NEW action.
        entity: ``Long [N]`` gold entity index (document-local, ``-1`` when unknown).
        max_distance: the antecedent window the pairs were built with.

    Example (three mentions, two feature templates per pair, one for NEW):
        >>> f = DocumentFeatures(
        ...     n=3,
        ...     pair_i=torch.tensor([1, 2, 2]),
        ...     pair_j=torch.tensor([0, 1, 0]),
        ...     pair_feats=torch.tensor([[1, 2], [3, 4], [5, 6]]),
        ...     new_feats=torch.tensor([[7], [7], [8]]),
        ...     entity=torch.tensor([0, 1, 0]),
        ...     max_distance=2,
        ... )
        >>> AntecedentRanker(n_bits=4, max_distance=2)(f).shape
        torch.Size([3, 3])
    """

    n: int
    pair_i: Tensor
    pair_j: Tensor
    pair_feats: Tensor
    new_feats: Tensor
    entity: Tensor
    max_distance: int

    def __post_init__(self) -> None:
        # Any integral count, as n_samples elsewhere: a NumPy integer had been refused.
        self.n = as_int("DocumentFeatures.n", self.n, 0)

    def to(self, device: torch.device | str) -> DocumentFeatures:
        """A copy with every tensor on ``device``."""
        return DocumentFeatures(
            self.n,
            self.pair_i.to(device),
            self.pair_j.to(device),
            self.pair_feats.to(device),
            self.new_feats.to(device),
            self.entity.to(device),
            self.max_distance,
        )


class _HashedSum(torch.autograd.Function):
    """``weight[ids].sum(-1)`` with a scatter-add backward.

    Autograd's own backward for advanced indexing sorts the indices to accumulate
    duplicates; one ``index_add_`` into the dense gradient is several times faster for
    the millions of (pair, feature) ids of a training step.
    """

    @staticmethod
    def forward(ctx, weight: Tensor, ids: Tensor) -> Tensor:  # type: ignore[override]
        ctx.save_for_backward(ids)
        ctx.size = weight.shape[0]
        return weight.index_select(0, ids.reshape(-1)).view(ids.shape).sum(-1)

    @staticmethod
    def backward(ctx, grad: Tensor) -> tuple[Tensor, None]:  # type: ignore[override]
        (ids,) = ctx.saved_tensors
        out = grad.new_zeros(ctx.size)
        out.index_add_(0, ids.reshape(-1), grad[..., None].expand(ids.shape).reshape(-1))
        return out, None


def _hashed_sums(weight: Tensor, parts: Sequence[Tensor]) -> list[Tensor]:
    """Each ``[rows, templates]`` part's rows' summed hashed weights: one gather (and one
    scatter-add in backward) for all the parts of one width. Documents usually share their
    number of templates; one of another width (an empty document's ``[0, 0]``, another
    pipeline's features) gets its own gather rather than torch.cat's size error."""
    out: list[Tensor] = [weight.new_empty(0)] * len(parts)
    for width in sorted({part.shape[-1] for part in parts}):
        which = [i for i, part in enumerate(parts) if part.shape[-1] == width]
        joined = torch.cat([parts[i] for i in which]).to(weight.device, torch.long)
        sums = _HashedSum.apply(weight, joined).split([parts[i].shape[0] for i in which])
        for i, rows in zip(which, sums, strict=True):
            out[i] = rows
    return out


def _check_document(f: DocumentFeatures, n_ids: int | None) -> None:
    """ValueError naming the field of a document whose tensors do not fit together: the
    shapes, the pairs (``0 < i - j <= max_distance``, ``i < n``) and the feature ids
    (``[0, n_ids)``; not checked when ``n_ids`` is None). ``n`` is read as at construction
    and written back as a Python int. One host synchronisation, for the value checks."""
    if not isinstance(f, DocumentFeatures):
        raise ValueError(
            f"expected DocumentFeatures (tensors of mention features), got "
            f"{type(f).__name__}; build them from a corpus with "
            "calib_metrics.paper.coref_features.extract_features or your own pipeline"
        )
    # The rule of __post_init__, for an n set after construction: a NumPy integer had
    # passed there and been refused here.
    f.n = as_int("DocumentFeatures.n", f.n, 0)
    fields = {"pair_i": 1, "pair_j": 1, "pair_feats": 2, "new_feats": 2, "entity": 1}
    for name, ndim in fields.items():
        x = getattr(f, name)
        # A bool tensor is no index either: pair_i - pair_j of two had failed in torch.
        integer = isinstance(x, Tensor) and not (
            x.is_floating_point() or x.is_complex() or x.dtype == torch.bool
        )
        if not integer or x.ndim != ndim:
            got = f"{x.dtype} {tuple(x.shape)}" if isinstance(x, Tensor) else type(x).__name__
            raise ValueError(
                f"DocumentFeatures.{name} must be a {ndim}-d integer tensor, got {got}"
            )
        check_not_meta(x, f"DocumentFeatures.{name}")
    pairs, mentions = ("pair_i", f.pair_i.numel()), ("n", f.n)
    rows = {"pair_j": pairs, "pair_feats": pairs, "new_feats": mentions, "entity": mentions}
    for name, (like, expected) in rows.items():
        if (got := getattr(f, name).shape[0]) != expected:
            raise ValueError(
                f"DocumentFeatures.{name} must have {expected} rows ({like}), got {got}"
            )
    gap = f.pair_i - f.pair_j
    # A pair listed twice would be scored once, by whichever row the scatter kept.
    keys = (f.pair_i * (f.n + 1) + f.pair_j).sort().values
    bad = torch.stack([
        ((gap < 1) | (gap > f.max_distance) | (f.pair_j < 0) | (f.pair_i >= f.n)).any(),
        (keys[1:] == keys[:-1]).any(),
        *(
            (x < 0).any() | (x >= n_ids).any()
            for x in ((f.pair_feats, f.new_feats) if n_ids is not None else ())
        ),
    ]).tolist()  # fmt: skip
    if bad[0]:
        raise ValueError(
            f"every pair needs 0 < pair_i - pair_j <= max_distance ({f.max_distance}), "
            f"pair_j >= 0 and pair_i < n ({f.n})"
        )
    if bad[1]:
        raise ValueError("DocumentFeatures lists a (pair_i, pair_j) pair twice: one row each")
    for name, flag in zip(("pair_feats", "new_feats"), bad[2:], strict=False):  # no ids: none
        if flag:
            raise ValueError(f"DocumentFeatures.{name} ids must lie in [0, 2**n_bits = {n_ids})")


def _gold_options(f: DocumentFeatures) -> Tensor:
    """:meth:`AntecedentRanker.gold_options` of a checked document."""
    n, ent = f.n, f.entity
    gold = torch.zeros((n, n), dtype=torch.bool, device=ent.device)
    same = (ent[f.pair_i] == ent[f.pair_j]) & (ent[f.pair_i] >= 0)
    gold[f.pair_i[same], f.pair_j[same]] = True
    diag = torch.arange(n, device=ent.device)
    gold[diag, diag] = ~gold.any(-1) & (ent >= 0)
    return gold


class AntecedentRanker(nn.Module):
    """Antecedent ranker with hashed sparse features: one weight per hash bucket.

    Args:
        n_bits: the weight vector has ``2**n_bits`` entries (hash buckets).
        max_distance: farthest candidate antecedent, in mentions (default 100).

    Example (features made by hand: mention 2 corefers with mention 0):
        >>> f = DocumentFeatures(
        ...     n=3,
        ...     pair_i=torch.tensor([1, 2, 2]),
        ...     pair_j=torch.tensor([0, 1, 0]),
        ...     pair_feats=torch.tensor([[1, 2], [3, 4], [5, 6]]),
        ...     new_feats=torch.tensor([[7], [7], [8]]),
        ...     entity=torch.tensor([0, 1, 0]),
        ...     max_distance=2,
        ... )
        >>> model = AntecedentRanker(n_bits=12, max_distance=2)
        >>> scores, mask = model.score_batch([f])
        >>> scores.shape, mask.tolist()
        (torch.Size([1, 3, 3]), [[True, True, True]])
        >>> history = model.fit([f], l2=1e-3, epochs=20, lr=0.5)
        >>> history[-1] < history[0]
        True
    """

    def __init__(self, n_bits: int = 20, max_distance: int = 100) -> None:
        super().__init__()
        low, high = N_BITS_RANGE
        if not isinstance(n_bits, int) or not low <= n_bits <= high:
            raise ValueError(f"n_bits must be an int in [{low}, {high}], got {n_bits!r}")
        check_int("max_distance", max_distance)
        self.n_bits = n_bits
        self.max_distance = max_distance
        self.weight = nn.Parameter(torch.zeros(1 << n_bits))

    def extra_repr(self) -> str:
        return f"n_bits={self.n_bits}, max_distance={self.max_distance}"

    # -- features and scores ---------------------------------------------------------

    def _features(self, features: DocumentFeatures) -> DocumentFeatures:
        # A ranker built under torch.device("meta") or moved there holds no weights.
        check_not_meta(self.weight, "the model's weight")
        _check_document(features, 1 << self.n_bits)
        if features.max_distance != self.max_distance:
            raise ValueError(
                f"features were built with max_distance={features.max_distance}, "
                f"the model uses {self.max_distance}"
            )
        return features

    def forward(self, features: DocumentFeatures) -> Tensor:
        """The document's score matrix ``[N, N]`` (``-inf`` outside the antecedent window).

        ``scores[i, j] = w · f(i, j)`` for ``0 < i - j <= max_distance``, ``scores[i, i]``
        is NEW's score, every other entry is ``-inf``.
        """
        return self._score_many([self._features(features)])[0]

    def _score_many(self, feats: Sequence[DocumentFeatures]) -> list[Tensor]:
        w = self.weight
        pairs = _hashed_sums(w, [f.pair_feats for f in feats])
        news = _hashed_sums(w, [f.new_feats for f in feats])
        out = []
        for f, pair, new in zip(feats, pairs, news, strict=True):
            scores = torch.full((f.n, f.n), float("-inf"), dtype=w.dtype, device=w.device)
            diag = torch.arange(f.n, device=w.device)
            scores = scores.index_put((f.pair_i.to(w.device), f.pair_j.to(w.device)), pair)
            out.append(scores.index_put((diag, diag), new))
        return out

    def score_document(self, doc: DocumentFeatures) -> Tensor:
        """Alias of :meth:`forward` for one document: ``[N, N]`` scores."""
        return self(doc)

    def score_batch(self, docs: Sequence[DocumentFeatures]) -> tuple[Tensor, Tensor]:
        """Padded scores ``[B, N, N]`` and mask ``[B, N]`` (True at real mentions).

        Padding entries are 0 (finite); the functions of :mod:`calib_metrics.models.coref`
        treat masked mentions as singletons.
        """
        if len(docs) == 0:
            raise ValueError("score_batch needs at least one document")
        feats = [self._features(d) for d in docs]
        n = max(f.n for f in feats)
        w = self.weight
        scores = torch.zeros((len(feats), n, n), dtype=w.dtype, device=w.device)
        mask = torch.zeros((len(feats), n), dtype=torch.bool, device=w.device)
        for b, f in enumerate(feats):
            scores[b, : f.n, : f.n] = self(f)
            mask[b, : f.n] = True
        return scores, mask

    # -- likelihood and training -----------------------------------------------------

    @staticmethod
    def gold_options(features: DocumentFeatures) -> Tensor:
        """Bool ``[N, N]``: the antecedent choices consistent with the gold entities.

        Earlier mentions of the same entity within the window, else NEW. Rows of
        mentions with no gold entity (id ``-1``) are all False. The document is checked as
        the ranker's own calls check it (one host synchronisation).
        """
        _check_document(features, None)
        return _gold_options(features)

    def gold_log_likelihood(self, doc: DocumentFeatures) -> tuple[Tensor, int]:
        """Summed ``log P(a_i ∈ gold_i | x)`` over mentions with a gold entity, and their count.

        Example (two mentions of one entity, all weights zero):
            >>> f = DocumentFeatures(
            ...     n=2, pair_i=torch.tensor([1]), pair_j=torch.tensor([0]),
            ...     pair_feats=torch.tensor([[1]]), new_feats=torch.tensor([[2], [2]]),
            ...     entity=torch.tensor([0, 0]), max_distance=1)
            >>> ll, count = AntecedentRanker(n_bits=8, max_distance=1).gold_log_likelihood(f)
            >>> round(ll.item(), 4), count   # log 1 (first is NEW) + log 1/2
            (-0.6931, 2)
        """
        f = self._features(doc)
        return self._gold_ll(f, self(f))

    def _gold_ll(self, f: DocumentFeatures, scores: Tensor) -> tuple[Tensor, int]:
        if f.n == 0:
            return scores.new_zeros(()), 0
        gold = _gold_options(f.to(scores.device))
        rows = gold.any(-1)
        log_z = torch.logsumexp(scores[rows], -1)
        log_gold = torch.logsumexp(scores[rows].masked_fill(~gold[rows], float("-inf")), -1)
        return (log_gold - log_z).sum(), int(rows.sum())

    def objective(self, docs: Sequence[DocumentFeatures], l2: float) -> float:
        """Mean per-mention negative gold log-likelihood plus ``l2/2 * ||w||^2`` (no grad)."""
        with torch.no_grad():
            total, count = 0.0, 0
            feats = [self._features(d) for d in docs]
            for start in range(0, len(feats), 16):
                batch = feats[start : start + 16]
                for f, scores in zip(batch, self._score_many(batch), strict=True):
                    ll, c = self._gold_ll(f, scores)
                    total += float(ll)
                    count += c
            penalty = 0.5 * l2 * float(self.weight.pow(2).sum())
        return -total / max(count, 1) + penalty

    def fit(
        self,
        docs: Sequence[DocumentFeatures],
        *,
        l2: float = 1e-4,
        epochs: int = 10,
        lr: float = 0.1,
        batch_size: int = 8,
        generator: torch.Generator | None = None,
        progress: bool = False,
    ) -> list[float]:
        """Train with Adagrad on the L2-penalised marginal likelihood of gold antecedents.

        Documents are shuffled each epoch (with ``generator``) and taken ``batch_size``
        at a time; each step minimises the batch's mean per-mention negative
        log-likelihood plus ``l2/2 * ||w||^2``.

        Returns:
            The full training objective (:meth:`objective`) before training and after
            every epoch: ``epochs + 1`` floats.
        """
        check_generator(generator)
        if isinstance(l2, bool) or not isinstance(l2, (int, float)) or not 0 <= l2 < math.inf:
            raise ValueError(f"l2 must be a finite number >= 0, got {l2!r}")
        check_int("epochs", epochs, 0)
        check_int("batch_size", batch_size)
        check_flag("progress", progress)  # "no" is truthy: it had shown the bar
        if isinstance(lr, bool) or not isinstance(lr, (int, float)) or not 0 < lr < math.inf:
            raise ValueError(f"lr must be a finite number > 0, got {lr!r}")
        feats = [self._features(d) for d in docs]
        if not any(f.n for f in feats):
            raise ValueError("fit needs at least one document with mentions")
        optimizer = torch.optim.Adagrad(self.parameters(), lr=lr)
        history = [self.objective(feats, l2)]
        epoch_iter = range(epochs)
        if progress:
            from tqdm.auto import tqdm

            epoch_iter = tqdm(epoch_iter, desc="train ranker", leave=False)
        for _ in epoch_iter:
            drawn_on = "cpu" if generator is None else generator.device  # not a default device
            order = torch.randperm(len(feats), generator=generator, device=drawn_on).tolist()
            for start in range(0, len(order), batch_size):
                batch = [feats[k] for k in order[start : start + batch_size]]
                optimizer.zero_grad()
                total, count = self.weight.new_zeros(()), 0
                for f, scores in zip(batch, self._score_many(batch), strict=True):
                    ll, c = self._gold_ll(f, scores)
                    total = total - ll
                    count += c
                if count == 0:
                    continue
                loss = total / count + 0.5 * l2 * self.weight.pow(2).sum()
                loss.backward()
                optimizer.step()
            history.append(self.objective(feats, l2))
            if progress:
                epoch_iter.set_postfix(objective=f"{history[-1]:.4f}")
        return history

    # -- persistence -------------------------------------------------------------------

    def save(self, path: str | Path) -> Path:
        """Write the weights and settings to ``path`` (``torch.save``)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        torch.save(
            {
                "format": _FORMAT_VERSION,
                "n_bits": self.n_bits,
                "max_distance": self.max_distance,
                "weight": self.weight.detach().cpu(),
            },
            path,
        )
        return path

    @classmethod
    def load(cls, path: str | Path, map_location: str | torch.device = "cpu") -> AntecedentRanker:
        """Read a model written by :meth:`save`, in the dtype it was saved in.

        Raises:
            FileNotFoundError: no file at ``path``.
            ValueError: naming the file and the field: not a ranker file, a missing
                field, settings the constructor refuses, or a weight that is not a
                floating-point tensor of ``2**n_bits`` finite entries; or naming
                ``map_location`` when it is the meta device (no values to load), a
                device not available here (``"cuda"`` without CUDA), or not a device
                (the model goes to one device: a dict or a function had failed in
                ``Module.to``).

        Example:
            >>> import tempfile, os
            >>> model = AntecedentRanker(n_bits=8, max_distance=5)
            >>> with tempfile.TemporaryDirectory() as tmp:
            ...     p = model.save(os.path.join(tmp, "ranker.pt"))
            ...     AntecedentRanker.load(p)
            AntecedentRanker(n_bits=8, max_distance=5)
        """
        if not isinstance(map_location, (str, torch.device)):
            raise ValueError(
                f"map_location must be a device (a str or torch.device), got "
                f"{type(map_location).__name__}: the model goes to one device"
            )
        path = Path(path)
        state = _read_state(path, load_torch_file(path, map_location))
        try:
            model = cls(n_bits=state["n_bits"], max_distance=state["max_distance"])
        except ValueError as err:
            raise ValueError(f"{path}: {err}") from None
        weight = _checked_weight(path, state["weight"], model.weight.numel(), map_location)
        # The weight's dtype is the model's: a ranker saved after .double() stays float64.
        model = model.to(dtype=weight.dtype)
        with torch.no_grad():
            model.weight.copy_(weight)
        return model.to(map_location)


_SAVED_FIELDS = ("format", "n_bits", "max_distance", "weight")


def _read_state(path: Path, state: object) -> dict:
    """The saved dict of an :meth:`AntecedentRanker.save` file, every field present."""
    if not isinstance(state, dict) or state.get("format") != _FORMAT_VERSION:
        raise ValueError(f"{path} is not an AntecedentRanker file (format {_FORMAT_VERSION})")
    missing = [name for name in _SAVED_FIELDS if name not in state]
    if missing:
        raise ValueError(f"{path} is missing the field(s) {', '.join(map(repr, missing))}")
    return state


def _checked_weight(path: Path, weight: object, size: int, map_location: object) -> Tensor:
    """The saved weight, refused unless a floating-point ``[size]`` tensor of finite
    values: a NaN weight would make every score NaN, silently, at the first document.
    One loaded onto the meta device (``map_location``) has no values to check or use."""
    if not isinstance(weight, Tensor) or not weight.is_floating_point():
        got = weight.dtype if isinstance(weight, Tensor) else type(weight).__name__
        raise ValueError(f"{path}: field 'weight' must be a floating-point tensor, got {got}")
    check_not_meta(weight, f"{path}: the weight loaded with map_location={map_location!r}")
    if tuple(weight.shape) != (size,):
        raise ValueError(
            f"{path}: field 'weight' must have shape [2**n_bits] = [{size}], "
            f"got {list(weight.shape)}"
        )
    if not bool(torch.isfinite(weight).all()):
        raise ValueError(f"{path}: field 'weight' holds NaN or infinite values")
    return weight
