"""Recalibration of structured models: a temperature on a linear chain's potentials, and on
a coreference ranker's antecedent scores.

Linear chains (:class:`ChainTemperature`). Dividing every potential (emissions,
transitions, start, end) by one ``T > 0`` scales every path score by ``1 / T``: the
Viterbi path is unchanged (accuracy too), while the marginals, pairwise marginals and
samples sharpen (``T < 1``) or flatten (``T > 1``). ``separate=True`` fits one temperature
for the emissions and one for the transition, start and end scores (an HMM's emission and
transition log-probabilities can be off by different factors; the Viterbi path may then
change). Fitting maximises the dev log-likelihood of the gold tag sequences,
``Σ_b score_T(y_b) - log Z_T(x_b)`` (the marginal likelihood of the gold tags), by L-BFGS
on ``log T`` in float64: its gradient is the usual "observed minus expected" counts, from
:func:`~calib_metrics.models.linear_chain.log_partition`'s exact backward. The alternative
``objective="calib_err"`` picks ``T`` by the debiased CalibErr of the dev tag queries, on a
log grid around the likelihood fit's ``T`` (whose checks it shares), widened while the
lowest error lies on its edge (``docs/recalibration.md`` compares the two on held-out
data); that error is jagged in ``T``, so its pick is within the dev set's noise, and the
likelihood is the stable default. A ``-inf`` potential (a forbidden choice: a BIO
tagger's I-X after O) stays ``-inf`` at every ``T``; gold tags that take one are refused.

Coreference (:class:`CorefTemperature`). Each mention's antecedent distribution is a softmax
of its scores; ``scores / T`` (plus an optional offset ``b`` on every NEW score) is fitted by
the dev likelihood of the gold antecedent *sets*, ``Σ_i log Σ_{j ∈ gold(i)} P_T(a_i = j)``,
the ranker's own training objective. Exact pairwise marginals
(:func:`~calib_metrics.models.coref.coreference_marginals`) and sampled clusterings then
come from the recalibrated scores.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, ClassVar

import torch
from torch import Tensor

from calib_metrics.functional import calibration_error
from calib_metrics.functional.errors import check_flag, check_int
from calib_metrics.models import coref as coref_model
from calib_metrics.models import linear_chain
from calib_metrics.models.linear_chain import ChainMarginals
from calib_metrics.recalibration._common import (
    FittedModule,
    SettingsInState,
    check_finite_optimum,
    check_floating,
    check_temperature_optimum,
    check_tensor,
    constant_rows,
    flat_scores_warning,
    lbfgs,
    masked_float64_copy,
    plain_copy,
    tag_padding_hint,
    typical_gap,
    warn_caller,
)

__all__ = ["ChainTemperature", "CorefTemperature"]

_OBJECTIVES = ("likelihood", "calib_err")


def _check_potentials(emissions, transitions, start, end, mask, gold: bool = False) -> Tensor:
    """Check what linear_chain does not (type, emptiness, NaN, +inf; -inf forbids a
    choice, as in linear_chain); return the bool mask. With ``gold``, for the callers that
    read gold tags through the mask themselves (fit, nll), also the mask's values (0/1, as
    linear_chain checks them; :func:`_check_tags` checks its layout with the tags) and a
    sentence at least: a batch of no sentences (B = 0, left_align's of rows that are all
    padding) has nothing to fit or score, but the other methods give empty results."""
    potentials = (("emissions", emissions), ("transitions", transitions), ("start", start),
                  ("end", end))  # fmt: skip
    for name, x in potentials:
        check_floating(check_tensor(x, name), name)
    if emissions.ndim != 3 or emissions.shape[1] == 0 or (gold and emissions.shape[0] == 0):
        raise ValueError(
            f"emissions must be [B, T, K] with B, T >= 1 (a non-empty dev set), "
            f"got shape {tuple(emissions.shape)}"
        )
    if mask is None:
        mask = torch.ones(emissions.shape[:2], dtype=torch.bool, device=emissions.device)
    check_tensor(mask, "mask")
    if tuple(mask.shape) != tuple(emissions.shape[:2]):
        raise ValueError(
            f"mask must be [B, T] = {tuple(emissions.shape[:2])}, got {tuple(mask.shape)}"
        )
    linear_chain.check_mask_dtype(mask)
    # Its layout is checked with the tags, whose padding the fix names; a bool mask (or
    # none) has no values to read.
    if gold and mask.dtype != torch.bool:
        linear_chain.check_mask_flags(bool(linear_chain.mask_not_binary(mask)), False, False)
    mask = mask.to(device=emissions.device, dtype=torch.bool)
    # Padded emissions are never read (linear_chain checks them inside the mask only).
    for name, x in (("emissions", emissions[mask]), *potentials[1:]):
        if bool((torch.isnan(x) | (x == math.inf)).any()):
            raise ValueError(f"{name} contains NaN or +inf (-inf, a forbidden choice, is fine)")
    return mask


def _check_tags(
    tags: object, mask: Tensor, num_tags: int, mask_given: bool, method: str = "fit"
) -> Tensor:
    """The tags in range at unmasked positions, and the mask's layout (every sentence's
    first token, left-aligned), checked before the tags are read through it (an all-False
    mask had been "tags hold a single tag"). Either is refused with one fix for every
    padding problem of the batch (:func:`tag_padding_hint`): each had been told alone."""
    tags = check_tensor(tags, "tags")
    if tuple(tags.shape) != tuple(mask.shape):
        raise ValueError(f"tags must be [B, T] = {tuple(mask.shape)}, got {tuple(tags.shape)}")
    # Widened before the range check: in uint8 the bound 300 wraps to 44.
    tags = linear_chain.as_indices(tags, "tags")
    outside = linear_chain.tags_outside(tags, mask, num_tags)
    bad = _told_tag(tags, outside)
    padding = bad if bad is not None and bad < 0 else None
    _, first_missing, not_left_aligned = linear_chain.mask_flags(mask).tolist()
    hint = ""
    if padding is not None or first_missing or not_left_aligned:
        keep = mask if padding is None else mask & (tags != padding)
        hint = tag_padding_hint(padding, mask_given, *_unreadable_rows(keep), method)
    if padding is None:  # the mask told before a tag id past the last (no padding)
        linear_chain.check_mask_flags(False, first_missing, not_left_aligned, hint)
    if bad is not None:
        raise ValueError(f"tags must lie in [0, {num_tags}) at unmasked positions, got {bad}{hint}")
    return torch.where(mask, tags, 0)


def _told_tag(tags: Tensor, outside: Tensor) -> int | None:
    """The bad tag to tell: the first padding (a negative id), whose fix the message
    gives, else the first other one."""
    if not bool(outside.any()):
        return None
    padding = outside & (tags < 0)
    return int(tags[padding if bool(padding.any()) else outside][0])


def _unreadable_rows(keep: Tensor) -> tuple[int | None, int | None, int | None]:
    """The first row of each layout of the tokens to ``keep`` that no chain mask holds:
    none kept (an empty sentence), the first one dropped (a leading [CLS]), one dropped
    between kept ones (a sub-word piece)."""
    seen = keep.cumsum(1) > 0
    empty = ~seen[:, -1]
    leading = ~keep[:, 0] & ~empty
    inside = (keep[:, 1:] & ~keep[:, :-1] & seen[:, :-1]).any(1)
    return tuple(int(x.nonzero()[0]) if bool(x.any()) else None for x in (empty, leading, inside))


def _check_two_tags(tags: Tensor, mask: Tensor) -> None:
    """Refuse dev tags of one tag. With three tags or more the NLL may have a finite
    optimum, but it only sets how sharply that one tag is predicted: the message had
    said that no temperature could be fitted, which is not so."""
    seen = tags[mask].unique()
    if int(seen.numel()) == 1:  # none at all is the mask's to refuse (_check_potentials)
        raise ValueError(
            f"tags hold a single tag ({int(seen[0])} at every token): a temperature fitted "
            "on them would only set how sharply that tag is predicted, not calibrate the "
            "others; fit on dev data where at least two tags occur"
        )


def chain_nll(
    parts: tuple[Tensor, Tensor, Tensor, Tensor],
    gold: tuple[Tensor, Tensor],
    mask: Tensor,
    emission_temperature: Tensor,
    transition_temperature: Tensor,
) -> Tensor:
    """Mean per-token negative log-likelihood of the gold paths under scaled potentials.

    ``gold`` holds the gold paths' emission and transition(+start+end) scores ``[B]``; the
    path score is linear in the potentials, so it scales with the temperatures directly.
    """
    log_z = _scaled_log_z(parts, mask, emission_temperature, transition_temperature, _divide_finite)
    score = gold[0] / emission_temperature + gold[1] / transition_temperature
    return (log_z - score).sum() / mask.sum()


def _scaled_log_z(parts, mask: Tensor, emission: Tensor, transition: Tensor, scale) -> Tensor:
    """``log Z`` of the chain whose emissions are ``scale(em, emission)`` and transitions,
    start and end ``scale(x, transition)`` (``scale``: :func:`_divide_finite` by
    temperatures, or :func:`_times_finite` by factors)."""
    em, tr, st, en = parts
    moved = [scale(em, emission), *(scale(x, transition) for x in (tr, st, en))]
    return linear_chain.log_partition(*moved, mask)


def _chain_slope(
    parts: tuple[Tensor, Tensor, Tensor, Tensor],
    gold: tuple[Tensor, Tensor],
    mask: Tensor,
    temperatures: Tensor,
    i: int,
    separate: bool,
) -> tuple[float, float]:
    """``dNLL/dβ`` at ``β = 0`` of :func:`chain_nll` with part ``i`` (0: emissions, 1:
    transitions, start and end; every potential when not ``separate``) scaled by ``β`` and
    the other by its fitted temperature: the expected score of that part under the
    flattened chain (uniform over the allowed paths when every part is flattened) minus the
    gold path's, per token, from ``log_partition``'s exact backward; and the part's
    largest finite potential, the scale of its rounding."""
    em, tr, st, en = parts
    beta = torch.zeros((), dtype=torch.float64, device=em.device, requires_grad=True)
    factors = [beta, beta] if not separate else [1 / temperatures[0], 1 / temperatures[1]]
    factors[i] = beta
    log_z = _scaled_log_z(parts, mask, factors[0], factors[1], _times_finite)
    score = gold[0] * factors[0] + gold[1] * factors[1]
    (slope,) = torch.autograd.grad((log_z - score).sum() / mask.sum(), beta)
    # The flattened part's potentials (all of them, with one temperature).
    parts_of = [(em[mask],), (tr, st, en)]
    scaled = parts_of[i] if separate else (*parts_of[0], *parts_of[1])
    sizes = [torch.where(torch.isfinite(x), x, 0.0).abs().amax() for x in scaled if x.numel()]
    return float(slope), float(torch.stack(sizes).amax())


def _state_value(module: FittedModule, state_dict: dict[str, Any], key: str) -> float | None:
    """The single finite value a load would leave in buffer ``key`` (the state's, or the
    module's own where a partial state lacks it), or None (not one finite value: the
    state's checks name it). One host read."""
    value = state_dict.get(key, module._buffers[key.rpartition(".")[2]])
    if not isinstance(value, Tensor) or value.is_meta or value.numel() != 1:
        return None
    number = float(value.reshape(()))
    return number if math.isfinite(number) else None


class ChainTemperature(SettingsInState, FittedModule):
    """A temperature on a linear chain's potentials, fitted on dev (see the module docstring).

    ``.temperature`` divides the emissions and, unless ``separate=True``, all potentials;
    ``.transition_temperature`` divides the transition, start and end scores (it equals
    ``.temperature`` when ``separate=False``). ``separate`` travels in the state, and a
    load into a module built otherwise is refused (a ``separate=True`` state had loaded
    into ``ChainTemperature()`` with two temperatures, which a refit then made one). A
    state saved before it travelled is read by its temperatures: two that differ only
    ``separate=True`` fits, and a module built without it refuses them; equal ones load
    into either.

    Args:
        separate: fit separate emission and transition temperatures.
        objective: ``"likelihood"`` (L-BFGS on the gold paths' log-likelihood), the
            stable default, or ``"calib_err"`` (a grid search over a single ``T`` for the
            lowest debiased CalibErr of the dev tag queries, ``bin_size="auto"``, around
            the likelihood fit's ``T``: a factor 5 either side, widened while the lowest
            error lies on the grid's edge, with a warning if it still does after a factor
            3125). The debiased error is jagged in ``T`` (binned, and clipped at 0 where
            its noise term outweighs the gaps): on a few hundred dev sentences it can
            jump between a positive value and 0 over temperatures a hundredth apart, so
            its pick lies within the dev error's noise; read it with the dev set's
            interval, not as an optimum.
        max_iter: L-BFGS iterations (of the likelihood fit, which either objective runs).

    Attributes:
        nll_: the mean per-token dev NLL at the fitted temperatures.
        calib_err_: with ``objective="calib_err"``, the dev debiased CalibErr at the
            fitted ``T``, the lowest the search found: an optimistic, noisy estimate (the
            minimum of a jagged curve, on the data it was picked on); measure the error on
            held-out data, with its interval.

    Example:
        >>> import torch
        >>> from calib_metrics.models.linear_chain import sample
        >>> g = torch.Generator().manual_seed(0)
        >>> em, tr = torch.randn(200, 6, 3, generator=g), torch.randn(3, 3, generator=g)
        >>> st, en = torch.zeros(3), torch.zeros(3)
        >>> tags = sample(em, tr, st, en, n_samples=1, generator=g)[0]  # gold from T = 1
        >>> ct = ChainTemperature().fit(3 * em, 3 * tr, st, en, tags)   # model 3x overconfident
        >>> round(ct.temperature.item())
        3
        >>> ct.marginals(3 * em, 3 * tr, st, en).unigram.shape
        torch.Size([200, 6, 3])
    """

    positive = ("temperature", "transition_temperature")
    settings = ("separate",)
    otherwise: ClassVar[dict[str, dict[Any, str]]] = {
        "separate": {
            False: "fits one temperature for all potentials",
            True: "fits one temperature for emissions and one for transitions",
        }
    }

    def __init__(
        self, separate: bool = False, objective: str = "likelihood", max_iter: int = 100
    ) -> None:
        super().__init__()
        if objective not in _OBJECTIVES:
            raise ValueError(f"objective must be one of {_OBJECTIVES}, got {objective!r}")
        check_flag("separate", separate)
        if separate and objective != "likelihood":
            raise ValueError("separate temperatures are fitted by objective='likelihood' only")
        check_int("max_iter", max_iter)
        self.separate = separate
        self.objective = objective
        self.max_iter = max_iter
        self.register_buffer("temperature", torch.tensor(1.0, dtype=torch.float64))
        self.register_buffer("transition_temperature", torch.tensor(1.0, dtype=torch.float64))

    def check_settings(self, state_dict: dict[str, Any], prefix: str) -> None:
        """Also a state saved before ``separate`` travelled: two temperatures that differ
        are ``separate=True``'s."""
        super().check_settings(state_dict, prefix)
        if self.separate or "separate" in self.saved_settings(state_dict, prefix):
            return
        emission = _state_value(self, state_dict, prefix + "temperature")
        transition = _state_value(self, state_dict, prefix + "transition_temperature")
        if None not in (emission, transition) and emission != transition:
            raise ValueError(
                f"{self.said_as}: the state's transition_temperature ({transition:g}) is not "
                f"its temperature ({emission:g}), as only separate=True fits them: build it "
                "with separate=True"
            )

    # ------------------------------------------------------------------ apply
    def scale(
        self,
        emissions: Tensor,
        transitions: Tensor,
        start: Tensor,
        end: Tensor,
        mask: Tensor | None = None,
    ) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """The recalibrated potentials ``(emissions, transitions, start, end)``, each in its
        own dtype, checked as :meth:`marginals` checks them (integer potentials had come
        back divided and truncated: ``[0, 0, 0]`` for ``[-0.90, -0.90, -0.30]``). ``mask``
        keeps the checks off the padding, which is divided like the rest."""
        self.check_fitted()  # T = 1 had been applied silently
        _check_potentials(emissions, transitions, start, end, mask)
        wide = self._divided(emissions, transitions, start, end)
        return tuple(
            x.to(given.dtype) for x, given in zip(wide, (emissions, transitions, start, end))
        )

    def _divided(self, emissions, transitions, start, end) -> tuple[Tensor, ...]:
        """The potentials divided by the temperatures (:func:`_divide_wide`)."""
        temperatures = (self.temperature, *(self.transition_temperature,) * 3)
        return tuple(
            _divide_wide(x, t) for x, t in zip((emissions, transitions, start, end), temperatures)
        )

    def marginals(
        self,
        emissions: Tensor,
        transitions: Tensor,
        start: Tensor,
        end: Tensor,
        mask: Tensor | None = None,
        *,
        pairwise: bool = True,
    ) -> ChainMarginals:
        """:func:`~calib_metrics.models.linear_chain.posterior_marginals` of the recalibrated
        chain."""
        self.check_fitted()
        _check_potentials(emissions, transitions, start, end, mask)
        scaled = self._divided(emissions, transitions, start, end)
        out = linear_chain.posterior_marginals(*scaled, mask, pairwise=pairwise)
        # Rounded once, to the emissions' dtype, as posterior_marginals returns them.
        return ChainMarginals(*(None if v is None else v.to(emissions.dtype) for v in out))

    def sample(
        self,
        emissions: Tensor,
        transitions: Tensor,
        start: Tensor,
        end: Tensor,
        mask: Tensor | None = None,
        *,
        n_samples: int,
        generator: torch.Generator | None = None,
    ) -> Tensor:
        """Exact samples ``[S, B, T]`` of the recalibrated chain."""
        self.check_fitted()
        _check_potentials(emissions, transitions, start, end, mask)
        scaled = self._divided(emissions, transitions, start, end)
        return linear_chain.sample(*scaled, mask, n_samples=n_samples, generator=generator)

    def nll(self, emissions, transitions, start, end, tags, mask=None) -> float:
        """Mean per-token negative log-likelihood of ``tags`` under the recalibrated chain.
        A batch of no sentences (``B = 0``) is refused: it has no token to average over."""
        self.check_fitted()
        given = mask is not None
        mask = _check_potentials(emissions, transitions, start, end, mask, gold=True)
        tags = _check_tags(tags, mask, emissions.shape[-1], given, "nll")
        parts, gold = self._parts(emissions, transitions, start, end, tags, mask)
        t_em = self.temperature.to(emissions.device)
        t_tr = self.transition_temperature.to(emissions.device)
        with torch.no_grad():
            return float(chain_nll(parts, gold, mask, t_em, t_tr))

    # -------------------------------------------------------------------- fit
    @staticmethod
    def _parts(emissions, transitions, start, end, tags, mask):
        parts = tuple(masked_float64_copy(x) for x in (emissions, transitions, start, end))
        em, tr, st, en = parts
        gold_em = linear_chain.sequence_score(
            em, torch.zeros_like(tr), torch.zeros_like(st), torch.zeros_like(en), tags, mask
        )
        gold_tr = linear_chain.sequence_score(torch.zeros_like(em), tr, st, en, tags, mask)
        return parts, (gold_em, gold_tr)

    @staticmethod
    def _check_gold(gold: tuple[Tensor, Tensor]) -> None:
        """Refuse gold paths that take a forbidden (-inf) choice: no T can explain them."""
        bad = ~torch.isfinite(gold[0] + gold[1])
        if bool(bad.any()):
            raise ValueError(
                f"the gold tags of sentence {int(bad.nonzero()[0])} take a forbidden (-inf) "
                "potential: no temperature makes them possible"
            )

    def fit(
        self,
        emissions: Tensor,
        transitions: Tensor,
        start: Tensor,
        end: Tensor,
        tags: Tensor,
        mask: Tensor | None = None,
    ) -> ChainTemperature:
        """Fit on dev potentials ``[B, T, K]``, ``[K, K]``, ``[K]``, ``[K]`` and gold ``tags``
        (a batch of no sentences, ``B = 0``, is refused: there is nothing to fit)."""
        given = mask is not None
        mask = _check_potentials(emissions, transitions, start, end, mask, gold=True)
        tags = _check_tags(tags, mask, emissions.shape[-1], given)
        _check_two_tags(tags, mask)
        mask, tags = plain_copy(mask), plain_copy(tags)
        parts, gold = self._parts(emissions, transitions, start, end, tags, mask)
        self._check_gold(gold)
        flat = self._flat_parts(parts, mask)
        # Fitted by either objective: its checks (no usable signal, separable data) are the
        # data's, and its T centres the CalibErr search.
        t_em, t_tr = self._fit_likelihood(parts, gold, mask, flat)
        if self.objective == "calib_err":
            t_em = t_tr = self._fit_calib_err(parts, gold, tags, mask, t_em, all(flat))
        self.temperature = t_em.detach().to(self.temperature.device)
        self.transition_temperature = t_tr.detach().to(self.temperature.device)
        self.fitted = torch.tensor(True, device=self.fitted.device)
        return self

    def _part_names(self) -> tuple[str, ...]:
        """The potentials each temperature divides, as the warnings and errors name them."""
        names = ("emission scores", "transition, start and end scores")
        return names if self.separate else ("potentials",)

    def _flat_parts(self, parts, mask) -> list[bool]:
        """Per temperature, whether the path scores do not depend on it (transitions, start
        and end all 0, or 0 and -inf: constraints only): it keeps T = 1, with a warning."""
        em, tr, st, en = parts
        flat_em = constant_rows(em[mask])
        flat_tr = all(constant_rows(x.reshape(1, -1)) for x in (tr, st, en))
        flat = [flat_em, flat_tr] if self.separate else [flat_em and flat_tr]
        symbols = ("T_em", "T_tr") if self.separate else ("T",)
        for is_flat, name, symbol in zip(flat, self._part_names(), symbols):
            if is_flat:
                flat_scores_warning(type(self).__name__, name, symbol)
        return flat

    def _fit_likelihood(self, parts, gold, mask, flat: list[bool]) -> tuple[Tensor, Tensor]:
        device = parts[0].device
        em, tr, st, en = parts
        names = self._part_names()
        free = torch.tensor([not f for f in flat], dtype=torch.float64, device=device)
        # Started at the potentials' own top gap (:func:`typical_gap`), where the scaled
        # ones are O(1): from T = 1, potentials of size 1e-6 left the NLL flat, and T = 1.
        rows = [em[mask], tr, st.reshape(1, -1), en.reshape(1, -1)]
        groups = [rows[:1], rows[1:]] if self.separate else [rows]
        zero = torch.zeros((), dtype=torch.float64, device=device)
        log_t = torch.stack([zero if f else typical_gap(*g).log() for f, g in zip(flat, groups)])
        log_t.requires_grad_()

        def loss() -> Tensor:
            t = (log_t * free).exp()
            return chain_nll(parts, gold, mask, t[0], t[-1])

        if all(flat):
            with torch.no_grad():
                self.nll_ = float(loss())
            one = torch.ones((), dtype=torch.float64, device=device)
            return one, one
        self.nll_ = lbfgs([log_t], loss, self.max_iter)
        t = (log_t.detach() * free).exp()
        fitted = (
            f"T_em = {float(t[0]):.3g}, T_tr = {float(t[1]):.3g}"
            if self.separate
            else f"T = {float(t[0]):.3g}"
        )
        for i in range(len(flat)):
            if flat[i]:
                continue
            slope, scale = _chain_slope(parts, gold, mask, t, i, self.separate)
            limit = t.clone()
            limit[i] = math.inf
            with torch.no_grad():
                uniform = float(chain_nll(parts, gold, mask, limit[0], limit[-1]))
            check_temperature_optimum(slope, scale, self.nll_, uniform, fitted, names[i])
        best, _ = linear_chain.viterbi(em / t[0], tr / t[-1], st / t[-1], en / t[-1], mask)
        gold_score = gold[0] / t[0] + gold[1] / t[-1]
        # Ranked right: the gold path is a best path (to rounding); the check needs a sign.
        right = gold_score >= best - 1e-9 * (1 + best.abs())
        margins = torch.where(right, 1.0, -1.0)
        check_finite_optimum(margins, fitted)
        return t[0], t[-1]

    def _fit_calib_err(self, parts, gold, tags, mask, centre: Tensor, flat: bool) -> Tensor:
        """The ``T`` of the lowest debiased CalibErr of the dev tag queries, searched around
        the likelihood fit's ``centre`` (:func:`_search_log_grid`); flat potentials keep
        ``T = 1`` (warned), as the likelihood fit does. Sets ``calib_err_`` and ``nll_``
        at that ``T``."""
        error = _tag_calib_err(parts, tags, mask)
        if flat:
            self.calib_err_ = error(1.0)
            return centre
        best, self.calib_err_ = _search_log_grid(error, float(centre), type(self).__name__)
        t = torch.tensor(best, dtype=torch.float64, device=centre.device)
        with torch.no_grad():
            self.nll_ = float(chain_nll(parts, gold, mask, t, t))
        return t


def _tag_calib_err(parts, tags: Tensor, mask: Tensor) -> Callable[[float], float]:
    """``T -> `` the debiased CalibErr (``bin_size="auto"``) of the one-vs-rest tag queries
    of the chain whose potentials ``parts`` are divided by ``T``."""
    em, tr, st, en = parts
    y = torch.nn.functional.one_hot(tags[mask], em.shape[-1]).to(torch.float64).reshape(-1)

    def error(t: float) -> float:
        unigram = linear_chain.posterior_marginals(
            em / t, tr / t, st / t, en / t, mask, pairwise=False
        ).unigram
        q = unigram[mask].reshape(-1)
        return float(calibration_error(q, y, bin_size="auto", debias=True))

    return error


# The CalibErr search's lattice: log T in steps of log(25) / 40, REACH steps (a factor 5)
# either side of the likelihood fit's T, widened by REACH more on the side where the
# lowest error lies on the edge, at most WIDENINGS times (up to a factor 5**5 = 3125 from
# that T), then refined between the best point's neighbours. The fixed grid it replaces,
# 41 points over [0.2, 5], had returned its edge (T = 5 for potentials 10x overconfident,
# whose optimum is near 10; 0.2 for potentials x0.01). The lattice holds that grid's
# points to an ulp of T, which moves the debiased CalibErr by up to ~1e-6 (marginals a
# few ulps apart change order across bin boundaries): enough to tip two near-tied minima
# of a flat objective (the POS CRF's T = 1.058 and 1.093, docs/recalibration.md).
_GRID_STEP = math.log(25.0) / 40
_GRID_REACH = 20
_GRID_WIDENINGS = 4


def _search_log_grid(
    error: Callable[[float], float], centre: float, owner: str
) -> tuple[float, float]:
    """The ``T`` (and its error) of the lowest ``error(T)`` found from ``centre``, on the
    lattice above, warning when the lowest error is still at an end of it after the
    widenings (a bound of the search, not an optimum). Ties (a plateau of zero debiased
    error on a small dev set) go to the ``T`` nearest ``centre``: they had gone to the
    lowest, sharpening the model for nothing."""
    k0 = round(math.log(centre) / _GRID_STEP)
    lo, hi = k0 - _GRID_REACH, k0 + _GRID_REACH
    errors: dict[int, float] = {}
    for widened in range(_GRID_WIDENINGS + 1):
        for k in range(lo, hi + 1):
            if k not in errors:
                errors[k] = error(math.exp(k * _GRID_STEP))
        best = min(sorted(errors), key=lambda k: (errors[k], abs(k - k0)))
        if lo < best < hi or widened == _GRID_WIDENINGS:
            break
        lo, hi = (lo - _GRID_REACH, hi) if best == lo else (lo, hi + _GRID_REACH)
    low, high = math.exp(lo * _GRID_STEP), math.exp(hi * _GRID_STEP)
    if best in (lo, hi):
        warn_caller(
            f"{owner}: the dev CalibErr is lowest at the {'lowest' if best == lo else 'highest'}"
            f" temperature searched, T = {math.exp(best * _GRID_STEP):.3g} (searched "
            f"{low:.3g} to {high:.3g}, around the likelihood fit's T = {centre:.3g}), so the "
            "fitted T is a bound of the search, not an optimum: check that the dev scores "
            "and tags belong together, or fit by objective='likelihood'"
        )
    # Refined between the best point's neighbours on the lattice (within the range searched).
    ends = [math.exp(max(best - 1, lo) * _GRID_STEP), math.exp(min(best + 1, hi) * _GRID_STEP)]
    # Numbers on the host, whatever torch's default device is.
    fine = torch.logspace(
        math.log10(ends[0]), math.log10(ends[1]), 21, dtype=torch.float64, device="cpu"
    )
    fine_errors = torch.tensor([error(float(t)) for t in fine], device="cpu")
    tied = (fine_errors == fine_errors.min()).nonzero()[:, 0]
    i = int(tied[(fine[tied].log() - math.log(centre)).abs().argmin()])
    return float(fine[i]), float(fine_errors[i])


def _check_coref(scores: object, mask: Tensor | None) -> Tensor | None:
    # Fitted in float64 regardless, but applied as T cast to the scores' dtype: a T of 2.69
    # divided integer scores as 2 (marginals off by 0.11).
    scores = check_tensor(scores, "scores")
    check_floating(scores, "scores")
    if scores.ndim != 3 or scores.shape[0] == 0 or scores.shape[1] == 0:
        raise ValueError(
            f"scores must be [B, N, N] with B, N >= 1 (a non-empty dev set), "
            f"got shape {tuple(scores.shape)}"
        )
    if scores.shape[1] != scores.shape[2]:
        # Read as square everywhere: [B, N, M] had failed inside torch (a RuntimeError), and
        # a fit's all-False gold had been told it marks no antecedent option.
        raise ValueError(
            f"scores must be square, [B, N, N] (mention i's score of each mention j <= i as "
            f"its antecedent, NEW at j = i), got shape {tuple(scores.shape)}"
        )
    if mask is not None:
        if tuple(check_tensor(mask, "mask").shape) != tuple(scores.shape[:2]):
            raise ValueError(
                f"mask must be [B, N] = {tuple(scores.shape[:2])}, got {tuple(mask.shape)}"
            )
        _check_zero_one(mask, "mask")
    # The entries the model reads: j <= i between real mentions (padding is never read).
    read = torch.ones(scores.shape[-2:], dtype=torch.bool, device=scores.device).tril()
    if mask is not None:
        real = mask.to(device=scores.device, dtype=torch.bool)
        read = read & real[:, :, None] & real[:, None, :]
    bad = torch.isnan(scores) | (scores == math.inf)
    if bool((bad & read).any()):
        # -inf is allowed: it forbids a choice (e.g. an antecedent beyond the window).
        raise ValueError("scores contain NaN or +inf at entries j <= i of real mentions")
    return mask


def _check_zero_one(flags: Tensor, name: str) -> None:
    """A mask or gold set is bool or integer 0/1, as a mask is everywhere in the library:
    fit had read a mask of 0.5 or 2, and a gold of 0.3, as True (one host read for an
    integer tensor, none for a bool one)."""
    linear_chain.check_mask_dtype(flags, name)
    if flags.dtype != torch.bool and bool(linear_chain.mask_not_binary(flags)):
        raise ValueError(f"{name} must be bool or integer 0/1: it holds other integers")


class CorefTemperature(SettingsInState, FittedModule):
    """A temperature (and optional NEW offset) on antecedent scores ``[B, N, N]``.

    The recalibrated scores are ``scores / T`` with ``b`` added to every NEW score
    (the diagonal) when ``new_offset=True``. Fitting maximises the dev likelihood of the
    gold antecedent sets (mentions with no gold antecedent option are skipped; a mention
    whose every gold option scores -inf, which no temperature can make possible, is
    refused). ``new_offset`` travels in the state, and a load into a module built
    otherwise is refused (a ``new_offset=True`` state had loaded into
    ``CorefTemperature()`` with its offset, which a refit then dropped). A state saved
    before it travelled is read by its offset: one other than 0 only ``new_offset=True``
    fits, and a module built without it refuses it; 0 loads into either.

    Args:
        new_offset: also fit the NEW-score offset ``b``.
        max_iter: L-BFGS iterations.

    Example:
        >>> import torch
        >>> from calib_metrics.models.coref import sample_antecedents
        >>> g = torch.Generator().manual_seed(0)
        >>> scores = torch.randn(50, 8, 8, generator=g)
        >>> a = sample_antecedents(scores, 1, generator=g)[0]           # gold from T = 1
        >>> gold = torch.nn.functional.one_hot(a, 8).bool()
        >>> ct = CorefTemperature().fit(4 * scores, gold)                # 4x overconfident
        >>> 3 < ct.temperature.item() < 5
        True
        >>> ct.marginals(4 * scores).shape
        torch.Size([50, 8, 8])
    """

    positive = ("temperature",)
    settings = ("new_offset",)
    otherwise: ClassVar[dict[str, dict[Any, str]]] = {
        "new_offset": {False: "fits no NEW offset", True: "fits a NEW offset"}
    }

    def __init__(self, new_offset: bool = False, max_iter: int = 100) -> None:
        super().__init__()
        check_int("max_iter", max_iter)
        check_flag("new_offset", new_offset)
        self.new_offset = new_offset
        self.max_iter = max_iter
        self.register_buffer("temperature", torch.tensor(1.0, dtype=torch.float64))
        self.register_buffer("offset", torch.tensor(0.0, dtype=torch.float64))

    def check_settings(self, state_dict: dict[str, Any], prefix: str) -> None:
        """Also a state saved before ``new_offset`` travelled: an offset other than 0 is
        ``new_offset=True``'s."""
        super().check_settings(state_dict, prefix)
        if self.new_offset or "new_offset" in self.saved_settings(state_dict, prefix):
            return
        offset = _state_value(self, state_dict, prefix + "offset")
        if offset is not None and offset != 0:
            raise ValueError(
                f"{self.said_as}: the state's offset is {offset:g}, which only "
                "new_offset=True fits: build it with new_offset=True"
            )

    def scale(self, scores: Tensor, mask: Tensor | None = None) -> Tensor:
        """The recalibrated scores ``scores / T + b * I``, in the scores' dtype, checked as
        :meth:`marginals` checks them. ``mask`` keeps the checks off the padding, which is
        scaled like the rest."""
        self.check_fitted()  # T = 1 had been applied silently
        _check_coref(scores, mask)
        return self._scaled_wide(scores).to(scores.dtype)

    def _scaled_wide(self, scores: Tensor) -> Tensor:
        """``scores / T + b * I`` in at least float32 (:func:`_divide_wide`), for the caller
        to round once."""
        temperature, offset = self.temperature.to(scores.device), self.offset.to(scores.device)
        return _scaled(scores, temperature, offset, _divide_wide)

    def log_probs(self, scores: Tensor, mask: Tensor | None = None) -> Tensor:
        """Recalibrated ``log P(a_i = j | x)``, ``[B, N, N]``, in the scores' dtype."""
        self.check_fitted()
        _check_coref(scores, mask)
        logp = coref_model.antecedent_log_probs(self._scaled_wide(scores), mask)
        return logp.to(scores.dtype)

    def marginals(
        self,
        scores: Tensor,
        mask: Tensor | None = None,
        n_samples: int | None = None,
        generator: torch.Generator | None = None,
    ) -> Tensor:
        """Pairwise coreference probabilities of the recalibrated ranker (exact by default)."""
        self.check_fitted()
        _check_coref(scores, mask)
        wide = self._scaled_wide(scores)
        return coref_model.coreference_marginals(wide, n_samples, mask, generator).to(scores.dtype)

    def sample(
        self,
        scores: Tensor,
        n_samples: int,
        mask: Tensor | None = None,
        generator: torch.Generator | None = None,
    ) -> Tensor:
        """Antecedent samples ``[S, B, N]`` of the recalibrated ranker."""
        self.check_fitted()
        _check_coref(scores, mask)
        wide = self._scaled_wide(scores)
        return coref_model.sample_antecedents(wide, n_samples, mask, generator)

    def fit(self, scores: Tensor, gold: Tensor, mask: Tensor | None = None) -> CorefTemperature:
        """Fit on dev ``scores [B, N, N]`` and bool ``gold [B, N, N]``: ``gold[b, i, j]``
        (``j <= i``) is True when choosing ``j`` (``j = i``: NEW) agrees with the gold
        entities (``AntecedentRanker.gold_options`` builds it for one document). ``gold``
        and ``mask`` may be integer 0/1, as masks are everywhere; a 0.5 or a 2 is refused,
        never read as True."""
        _check_coref(scores, mask)
        if mask is not None and not bool(mask.any()):
            # Checked before the gold read through it ("gold marks no antecedent option").
            raise ValueError("mask marks no real mention (it is all False): nothing to fit on")
        gold = check_tensor(gold, "gold")
        if tuple(gold.shape) != tuple(scores.shape):
            raise ValueError(f"gold must have the shape of scores {tuple(scores.shape)}, "
                             f"got {tuple(gold.shape)}")  # fmt: skip
        _check_zero_one(gold, "gold")
        s = masked_float64_copy(scores)
        mask = None if mask is None else plain_copy(mask).bool()
        gold, rows = _gold_rows(plain_copy(gold), mask, s)
        read = torch.ones_like(gold).tril()
        if mask is not None:
            read = read & mask[:, :, None] & mask[:, None, :]
        # Each mention's options all scoring the same: the scores do not depend on T,
        # which stays 1 (with a warning); the offset, if any, is fitted alone.
        flat = constant_rows(s, read)
        if flat:
            flat_scores_warning(type(self).__name__, "scores")
        # log T starts at the scores' own top gap (:func:`typical_gap`), where the
        # scaled ones are O(1): from T = 1, scores of size 1e-6 left the NLL flat.
        zero = torch.zeros((), dtype=torch.float64, device=s.device)
        start = zero if flat else typical_gap(torch.where(read, s, -math.inf)).log()
        free = torch.stack([start, zero]).requires_grad_()

        def loss() -> Tensor:
            log_t = free[0].detach() * 0 if flat else free[0]
            offset = free[1] if self.new_offset else free[1].detach() * 0
            return _gold_nll(_scaled(s, log_t.exp(), offset), gold, rows, mask)

        if flat and not self.new_offset:
            with torch.no_grad():
                self.nll_ = float(loss())
        else:
            self.nll_ = lbfgs([free], loss, self.max_iter)
        # Read without grad: a float() of the optimised tensor made PyTorch warn.
        fitted = free.detach().clone()
        if flat:
            fitted[0] = 0.0
        temperature, offset = fitted[0].exp(), fitted[1] if self.new_offset else fitted[1] * 0
        described = f"T = {float(temperature):.3g}"
        scores = "scores beyond the NEW offset" if self.new_offset else "scores"
        if not flat:
            limit = torch.full_like(temperature, math.inf)
            uniform = float(_gold_nll(_scaled(s, limit, offset), gold, rows, mask))
            slope = _coref_slope(s, offset, gold, rows, mask)
            scale = float(torch.where(read & torch.isfinite(s), s, 0.0).abs().amax())
            check_temperature_optimum(slope, scale, self.nll_, uniform, described, scores)
        logp = coref_model.antecedent_log_probs(_scaled(s, temperature, offset), mask)
        best_gold = logp.masked_fill(~gold, float("-inf")).amax(-1)
        best_other = logp.masked_fill(gold, float("-inf")).amax(-1)
        # Mentions with a wrong option to rank (the first mention has only NEW).
        ranked = rows & (best_other > float("-inf"))
        margins = (best_gold - best_other)[ranked]
        check_finite_optimum(margins, described)
        self.temperature = temperature.to(self.temperature.device)
        self.offset = fitted[1].to(self.offset.device)
        self.fitted = torch.tensor(True, device=self.fitted.device)
        return self


def _coref_slope(
    scores: Tensor, offset: Tensor, gold: Tensor, rows: Tensor, mask: Tensor | None
) -> float:
    """``dNLL/dβ`` at ``β = 1/T = 0`` of :func:`_gold_nll` of ``β scores + b I``: per
    mention, the expected score under the flattened softmax (uniform over the allowed
    options, NEW weighted by ``exp(b)``) minus that under it restricted to the gold options
    (with ``b = 0`` and one gold option: the options' mean score minus the gold one's)."""
    beta = torch.zeros((), dtype=torch.float64, device=scores.device, requires_grad=True)
    eye = torch.eye(scores.shape[-1], dtype=scores.dtype, device=scores.device)
    scaled = _times_finite(scores, beta) + offset.detach().to(scores.dtype) * eye
    (slope,) = torch.autograd.grad(_gold_nll(scaled, gold, rows, mask), beta)
    return float(slope)


def _gold_nll(scores: Tensor, gold: Tensor, rows: Tensor, mask: Tensor | None) -> Tensor:
    """Mean ``-log Σ_{j ∈ gold(i)} P(a_i = j)`` over the mentions ``rows`` that have a gold
    option."""
    logp = coref_model.antecedent_log_probs(scores, mask)
    log_gold = torch.logsumexp(logp.masked_fill(~gold, float("-inf")), -1)
    return -log_gold[rows].sum() / rows.sum()


def _gold_rows(gold: Tensor, mask: Tensor | None, scores: Tensor) -> tuple[Tensor, Tensor]:
    """The gold options ``j <= i`` of real mentions, and the rows that have one; refuses a
    mark above the diagonal (``j > i``: a transposed matrix's, dropped silently, had left
    a fit on the mentions it happened to spare) and a row whose every gold option is
    forbidden (-inf): no temperature makes it possible."""
    gold = gold.bool()
    if mask is not None:
        gold = gold & mask[:, :, None]
    later = gold & ~torch.ones_like(gold).tril()
    if bool(later.any()):
        b, i, j = later.nonzero()[0].tolist()
        raise ValueError(
            f"gold marks option {j} of mention {i} in document {b}: an antecedent comes "
            "before its mention (gold[b, i, j] with j <= i, j = i for a new entity; is "
            "gold transposed?)"
        )
    rows = gold.any(-1)
    if not bool(rows.any()):
        raise ValueError("gold marks no antecedent option: nothing to fit on")
    possible = coref_model.antecedent_log_probs(scores, mask) > -math.inf
    impossible = rows & ~(gold & possible).any(-1)
    if bool(impossible.any()):
        b, i = impossible.nonzero()[0].tolist()
        raise ValueError(
            f"every gold antecedent of mention {i} in document {b} scores -inf or at most "
            "-1e200 (forbidden): no temperature makes them possible"
        )
    return gold, rows


def _scaled(
    scores: Tensor,
    temperature: Tensor,
    offset: Tensor,
    divide: Callable[[Tensor, Tensor], Tensor] | None = None,
) -> Tensor:
    """``divide(scores, T) + b * I``: ``divide`` is :func:`_divide_finite` (the default, for
    the fit's gradient) or :func:`_divide_wide` (to apply a fitted ``T``)."""
    scaled = (divide or _divide_finite)(scores, temperature)
    eye = torch.eye(scores.shape[-1], dtype=scaled.dtype, device=scores.device)
    return scaled + offset.to(scaled.dtype) * eye


def _times_finite(x: Tensor, factor: Tensor) -> Tensor:
    """``x * factor`` with -inf (forbidden) entries kept -inf, also at ``factor = 0``."""
    finite = torch.isfinite(x)
    return torch.where(finite, torch.where(finite, x, 0.0) * factor.to(x.dtype), x)


def _divide_finite(x: Tensor, temperature: Tensor) -> Tensor:
    """``x / T`` with -inf (forbidden) entries kept -inf: dividing them would put NaN in
    the gradient with respect to T."""
    finite = torch.isfinite(x)
    scaled = torch.where(finite, x, 0.0) / temperature.to(x.dtype)
    return torch.where(finite, scaled, x)


def _divide_wide(x: Tensor, temperature: Tensor) -> Tensor:
    """``x / T`` in at least float32, by the float64 ``T`` cast to that dtype, for the
    caller to round once to ``x``'s dtype: applying a fitted ``T`` cast to bfloat16 with
    the scores (2.27292 as 2.2656) had moved the recalibrated marginals by up to 6.5e-3 on
    a chain and 3.0e-3 in coreference, where rounding the exact ones costs 2.0e-3 and
    1.9e-3. -inf entries stay out of the division (:func:`_divide_finite`), so that a
    gradient to ``T`` stays finite."""
    wide = torch.promote_types(x.dtype, torch.float32)
    return _divide_finite(x.to(wide), temperature.to(x.device))
