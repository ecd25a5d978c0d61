"""Exploratory analysis under coreference uncertainty: country "attack" events per period.

The paper's §6: for a country ``c`` and a document ``d`` with coreference clustering
``e_d``, ``f(c, e)`` holds for an entity ``e`` iff

* **affiliation**: some mention of ``e`` is described as ``c`` (its head word is in
  ``w(c)``, or the head has an ``nmod`` / ``amod`` dependent in ``w(c)``: "Americans",
  "American forces", "president of the U.S."), and ``c`` is the only country among
  the entity's mentions;
* **attack**: some mention of ``e`` is the ``nsubj`` of the verb "attack" or its agent
  in the passive ("they attacked", "attacked by them").

``a(d, c, e_d) = OR_e f(c, e)`` (Eq. 3) and ``n(t, c) = sum_{d in t} a(d, c)`` (Eq. 4).
Both are deterministic functions of the clustering, so evaluating them on sampled
clusterings samples their posterior (appendix, part 1).

Rules are evaluated once per mention (:class:`MentionTable`: which countries each
mention is described as, whether it is an attack agent); per sample only entity
roots change, and :func:`document_events` aggregates the tables over entities with
scatter-adds, for all samples at once.

Example:
    >>> import io, torch
    >>> from calib_metrics.paper.coref_conllu import read_coref_documents
    >>> from calib_metrics.paper.countries import CountryLexicon
    >>> text = ("# newdoc id = d\\n# meta::dateCreated = 2015-08-21\\n"
    ...     "1\\tFrance\\tFrance\\tPROPN\\tNNP\\t_\\t2\\tnsubj\\t_\\tEntity=(1)\\n"
    ...     "2\\tspoke\\tspeak\\tVERB\\tVBD\\t_\\t0\\troot\\t_\\t_\\n\\n"
    ...     "1\\tIt\\tit\\tPRON\\tPRP\\t_\\t2\\tnsubj\\t_\\tEntity=(1)\\n"
    ...     "2\\tattacked\\tattack\\tVERB\\tVBD\\t_\\t0\\troot\\t_\\t_\\n\\n")
    >>> doc = read_coref_documents(io.StringIO(text))[0]
    >>> table = EventExtractor(CountryLexicon({("france",): "FRA"})).table(doc)
    >>> table.codes, table.countries.tolist(), table.attacks.tolist()
    (['FRA'], [[True], [False]], [False, True])
    >>> document_events(table, torch.tensor([[0, 0], [0, 1]]))  # together / split
    tensor([[ True],
            [False]])
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from calib_metrics.functional.errors import as_int, check_flag, check_not_meta
from calib_metrics.models.linear_chain import as_indices
from calib_metrics.paper.countries import CountryLexicon
from calib_metrics.paper.events.stats import (
    CountDistribution,
    PosteriorSummary,
    poisson_binomial_summary,
    sample_summary,
)

__all__ = [
    "AFFILIATION_RELATIONS",
    "EventAnalysis",
    "EventExtractor",
    "MentionTable",
    "aggregate_events",
    "document_date",
    "document_events",
    "document_period",
    "gold_antecedents",
    "period_label",
    "period_span",
]

#: Dependents of a mention's head that make it "described as" a country. The
#: paper names ``nmod`` and ``amod``; ``nmod:poss`` ("North Korea's military") is
#: UD v2's split of Stanford's ``nmod`` and ``compound`` covers "U.S. forces",
#: which UD analyses as a compound, not an ``amod``.
AFFILIATION_RELATIONS: tuple[str, ...] = ("nmod", "nmod:poss", "amod", "compound")

PERIODS = ("month", "quarter", "year")


def _metadata(doc) -> dict:
    """The document's ``# meta::`` fields; none (a missing or ``None`` ``meta``) read as
    empty."""
    return getattr(doc, "meta", None) or {}


#: A date as documents' metadata write it: YYYY[-M[M][-D[D]]].
DATE = re.compile(r"([0-9]{4})(?:-([0-9]{1,2})(?:-([0-9]{1,2}))?)?")


def _parse_date(doc, key: str) -> tuple[_dt.date, int] | None:
    """``(date, parts)``: the date with a missing month or day set to 1, and how many
    of year, month, day the metadata gives (1 to 3); ``None`` without a date."""
    value = _metadata(doc).get(key)
    if not value:
        return None
    # Four-digit years only: "15-08-21" had been read as the year 15, "2015-08-21-99"
    # and "2015-" as 2015.
    written = DATE.fullmatch(str(value).strip())
    bad = f"document {getattr(doc, 'doc_id', '?')}: bad {key} {value!r} (want YYYY[-MM[-DD]])"
    if written is None:
        raise ValueError(bad)
    numbers = [int(p) for p in written.groups() if p is not None]
    try:
        date = _dt.date(numbers[0], *(numbers[1:] + [1, 1][: 3 - len(numbers)]))
    except ValueError as err:  # a month or day out of range
        raise ValueError(bad) from err
    return date, len(numbers)


def document_date(doc, key: str = "dateCreated") -> _dt.date | None:
    """A document's date from ``# meta::<key> = YYYY[-MM[-DD]]``, or ``None`` if absent.

    A missing month or day reads as 1, so the date of a year-only document is
    January 1st; :func:`document_period` does not place such a document in a month
    or quarter.

    Example:
        >>> from types import SimpleNamespace
        >>> document_date(SimpleNamespace(meta={"dateCreated": "2015-08-21"}))
        datetime.date(2015, 8, 21)
        >>> document_date(SimpleNamespace(meta={"dateCreated": "1999-05"}))
        datetime.date(1999, 5, 1)
    """
    parsed = _parse_date(doc, key)
    return None if parsed is None else parsed[0]


#: GUM's placeholder creation date: its 14 conversations and one court transcript carry
#: ``2000-01-01`` (modified 2000-01-01 too, in all but one), not when they were recorded.
UNKNOWN_DATES = ("2000-01-01",)

#: How many of year, month, day a date needs to fall in one period of each kind.
_PARTS_NEEDED = {"month": 2, "quarter": 2, "year": 1}


def has_unknown_date(
    doc, unknown: Collection[str] = UNKNOWN_DATES, key: str = "dateCreated"
) -> bool:
    """Whether the document's date is one of ``unknown``, compared as written (whole
    values: ``"2000"`` names a year-only date, not ``2000-01-01``).

    Example:
        >>> from types import SimpleNamespace
        >>> has_unknown_date(SimpleNamespace(meta={"dateCreated": " 2000-01-01"}))
        True
    """
    if isinstance(unknown, str):  # one date, not its characters
        unknown = (unknown,)
    written = _metadata(doc).get(key, "")
    return str(written).strip() in {d.strip() for d in unknown if d.strip()}


def document_period(
    doc,
    period: str = "quarter",
    key: str = "dateCreated",
    unknown: Collection[str] = UNKNOWN_DATES,
) -> str | None:
    """The :func:`period_label` of a document's date, or ``None`` if the date is too coarse
    or stands for "unknown" (``unknown``: dates compared as written; by default GUM's
    placeholder ``2000-01-01``, as ``reproduce events --unknown-dates`` has it: its
    conversations had been counted in 2000, with a false event).

    A date with only a year (``YYYY``) lies in one year but in no particular month
    or quarter: counting it in January (its :func:`document_date`) would put events
    where they may not have happened, so it has no month or quarter period and is
    left out of those counts (``None``). ``YYYY-MM`` places a document in its month
    and quarter. A document without the date raises ``ValueError``.

    Example:
        >>> from types import SimpleNamespace
        >>> doc = SimpleNamespace(doc_id="d", meta={"dateCreated": "1999"})
        >>> [document_period(doc, p) for p in ("month", "quarter", "year")]
        [None, None, '1999']
        >>> document_period(SimpleNamespace(meta={"dateCreated": "1999-05"}), "quarter")
        '1999Q2'
        >>> placeholder = SimpleNamespace(meta={"dateCreated": "2000-01-01"})
        >>> document_period(placeholder, "year"), document_period(placeholder, "year", unknown=())
        (None, '2000')
    """
    if period not in _PARTS_NEEDED:
        raise ValueError(f"period must be one of {PERIODS}, got {period!r}")
    if has_unknown_date(doc, unknown, key):
        return None
    parsed = _parse_date(doc, key)
    if parsed is None:
        raise ValueError(f"document {getattr(doc, 'doc_id', '?')} has no '# meta::{key}' date")
    date, parts = parsed
    return period_label(date, period) if parts >= _PARTS_NEEDED[period] else None


def period_label(date: _dt.date, period: str = "quarter") -> str:
    """``2015-08`` (month), ``2015Q3`` (quarter) or ``2015`` (year); labels sort in time order.

    Example:
        >>> d = _dt.date(2015, 8, 21)
        >>> [period_label(d, p) for p in ("month", "quarter", "year")]
        ['2015-08', '2015Q3', '2015']
    """
    if period == "month":
        return f"{date.year:04d}-{date.month:02d}"
    if period == "quarter":
        return f"{date.year:04d}Q{(date.month - 1) // 3 + 1}"
    if period == "year":
        return f"{date.year:04d}"
    raise ValueError(f"period must be one of {PERIODS}, got {period!r}")


_LABEL = re.compile(r"^(\d{4})(?:Q([1-4])|-(\d{2}))?$")


def _decimal_year(date: _dt.date) -> float:
    start = _dt.date(date.year, 1, 1)
    return date.year + (date - start).days / (_dt.date(date.year + 1, 1, 1) - start).days


def period_span(label: str) -> tuple[float, float]:
    """Start and end of a :func:`period_label` period in decimal years, to scale.

    A month or quarter spans its true share of its year (days / days in the year),
    so periods drawn at these positions keep the gaps between them in proportion.

    Example:
        >>> period_span("2015"), period_span("2015Q4")
        ((2015.0, 2016.0), (2015.7479452054795, 2016.0))
        >>> start, end = period_span("2016-02")
        >>> round((end - start) * 366, 6)  # February 2016: 29 of 366 days
        29.0
    """
    m = _LABEL.match(label)
    if m is None:
        raise ValueError(f"not a period label (2015, 2015Q3 or 2015-08): {label!r}")
    year = int(m.group(1))
    if m.group(2):
        first = 3 * int(m.group(2)) - 2  # the quarter's first month
        months = 3
    elif m.group(3):
        first, months = int(m.group(3)), 1
        if not 1 <= first <= 12:
            raise ValueError(f"not a period label (month {first}): {label!r}")
    else:
        return float(year), float(year + 1)
    after = first + months  # the month after the period, possibly January next year
    end = _dt.date(year + (after - 1) // 12, (after - 1) % 12 + 1, 1)
    return _decimal_year(_dt.date(year, first, 1)), _decimal_year(end)


@dataclass
class MentionTable:
    """Per-mention rule outcomes of one document.

    Attributes:
        doc_id: the document's id.
        codes: the ``K`` country codes that occur in the document's mentions.
        countries: ``Bool [N, K]``, mention ``i`` is described as country ``codes[k]``.
        attacks: ``Bool [N]``, mention ``i`` is the agent of an attack verb.
    """

    doc_id: str
    codes: list[str]
    countries: Tensor
    attacks: Tensor

    @property
    def can_fire(self) -> bool:
        """Whether some clustering could give an event (else ``a(d, c) = 0`` exactly)."""
        return bool(self.attacks.any()) and bool(self.countries.any())


@dataclass
class _Sentence:
    codes: list[str | None]  # country code of each word (through multiword matches)
    position: dict[int, int]  # CoNLL-U word id -> 0-based index
    children: list[list[int]]  # dependents of each word


def _passive(sent: Sequence[dict], verb: int, children: list[int]) -> bool:
    if (sent[verb].get("feats") or {}).get("Voice") == "Pass":
        return True
    return any(sent[k].get("deprel") in ("nsubj:pass", "aux:pass") for k in children)


def _has_case_by(sent: Sequence[dict], children: list[int]) -> bool:
    return any(
        sent[k].get("deprel") == "case"
        and str(sent[k].get("lemma") or sent[k].get("form") or "").lower() == "by"
        for k in children
    )


class EventExtractor:
    """The paper's syntactic rules, evaluated per mention (the ``x_d`` part of ``f``).

    Args:
        lexicon: the country lexicon ``w(c)``.
        verbs: lemmas of the event verb (``("attack",)``), matched case-insensitively.
        relations: dependency relations of a head's dependents that count for
            affiliation (default :data:`AFFILIATION_RELATIONS`).
        enhanced: also accept ``nsubj`` / ``nsubj:xsubj`` arcs of the enhanced graph
            ("X threatened to attack", whose controlled subject the basic tree omits).
            Off by default: the paper uses basic dependencies.

    Example:
        >>> ex = EventExtractor(CountryLexicon({("iraq",): "IRQ"}))
        >>> rows = [("Troops", "troop", "NOUN", 4, "nsubj"), ("of", "of", "ADP", 3, "case"),
        ...         ("Iraq", "Iraq", "PROPN", 1, "nmod"), ("attacked", "attack", "VERB", 0, "root")]
        >>> keys = ("form", "lemma", "upos", "head", "deprel")
        >>> sent = [{"id": k, **dict(zip(keys, row))} for k, row in enumerate(rows, 1)]
        >>> ex.head_codes(sent, 0), ex.is_agent(sent, 0)
        ({'IRQ'}, True)
    """

    def __init__(
        self,
        lexicon: CountryLexicon,
        verbs: Sequence[str] = ("attack",),
        relations: Sequence[str] = AFFILIATION_RELATIONS,
        enhanced: bool = False,
    ) -> None:
        if not verbs:
            raise ValueError("verbs must name at least one lemma")
        self.lexicon = lexicon
        self.verbs = frozenset(v.lower() for v in verbs)
        self.relations = frozenset(relations)
        self.enhanced = enhanced
        self._cache: tuple[Sequence[dict], _Sentence] | None = None

    def _sentence_info(self, sent: Sequence[dict]) -> _Sentence:
        # Mentions of one sentence come in a run, so one cached sentence suffices.
        if self._cache is None or self._cache[0] is not sent:
            forms = [str(t.get("form") or "") for t in sent]
            position = {t["id"]: k for k, t in enumerate(sent)}
            children: list[list[int]] = [[] for _ in sent]
            for k, t in enumerate(sent):
                g = position.get(t.get("head"))
                if g is not None:
                    children[g].append(k)
            info = _Sentence(self.lexicon.token_codes(forms), position, children)
            self._cache = (sent, info)
        return self._cache[1]

    def head_codes(self, sent: Sequence[dict], head: int) -> set[str]:
        """Countries a mention with head word ``sent[head]`` is described as."""
        info = self._sentence_info(sent)
        codes = info.codes
        found = {codes[head]} if codes[head] else set()
        for k in info.children[head]:
            if codes[k] and sent[k].get("deprel") in self.relations:
                found.add(codes[k])
        return found

    def _is_verb(self, tok: dict) -> bool:
        lemma = str(tok.get("lemma") or "").lower()
        return lemma in self.verbs and tok.get("upos") in (None, "_", "VERB")

    def is_agent(self, sent: Sequence[dict], head: int) -> bool:
        """Whether the word ``sent[head]`` is the agent of an event verb (active or passive)."""
        info = self._sentence_info(sent)
        tok = sent[head]
        gov = info.position.get(tok.get("head"))
        if gov is not None and self._is_verb(sent[gov]):
            rel = tok.get("deprel")
            if rel == "nsubj" or rel == "obl:agent":
                return True
            if (
                rel == "obl"
                and _has_case_by(sent, info.children[head])
                and _passive(sent, gov, info.children[gov])
            ):
                return True
        if self.enhanced:
            for rel, gid in tok.get("deps") or ():
                g = info.position.get(gid)
                if g is not None and rel in ("nsubj", "nsubj:xsubj") and self._is_verb(sent[g]):
                    return True
        return False

    def table(self, doc) -> MentionTable:
        """Evaluate both rules on every mention of ``doc`` (a coref ``Document``)."""
        per_mention: list[set[str]] = []
        attacks: list[bool] = []
        for m in doc.mentions:
            sent = doc.sentences[m.sentence]
            if not 0 <= m.head < len(sent):
                raise ValueError(f"document {doc.doc_id}: mention head {m.head} out of range")
            per_mention.append(self.head_codes(sent, m.head))
            attacks.append(self.is_agent(sent, m.head))
        self._cache = None
        codes = sorted(set().union(*per_mention)) if per_mention else []
        index = {c: k for k, c in enumerate(codes)}
        countries = torch.zeros(len(per_mention), len(codes), dtype=torch.bool)
        for i, found in enumerate(per_mention):
            for c in found:
                countries[i, index[c]] = True
        return MentionTable(doc.doc_id, codes, countries, torch.tensor(attacks, dtype=torch.bool))


def gold_antecedents(doc) -> Tensor:
    """Antecedent vector of the gold clustering: each mention points to its entity's
    previous mention (itself when it is the first). ``Long [N]``.

    Example:
        >>> from types import SimpleNamespace as NS
        >>> doc = NS(mentions=[NS(entity="a"), NS(entity="b"), NS(entity="a")])
        >>> gold_antecedents(doc)
        tensor([0, 1, 0])
    """
    last: dict[str, int] = {}
    out = []
    for i, m in enumerate(doc.mentions):
        out.append(last.get(m.entity, i))
        last[m.entity] = i
    return torch.tensor(out, dtype=torch.long)


def _check_roots_shape(table: MentionTable, roots: object) -> None:
    """ValueError unless ``roots`` is a tensor ``[S, N]`` with values, ``N`` the document's
    mentions."""
    n = table.countries.shape[0]
    if not isinstance(roots, Tensor):
        raise ValueError(f"roots must be a torch.Tensor [S, {n}], got {type(roots).__name__}")
    if roots.ndim != 2 or roots.shape[1] != n:
        raise ValueError(
            f"roots must be [S, {n}] for document {table.doc_id}, got {tuple(roots.shape)}"
        )
    if roots.shape[0] == 0:  # as n_samples=0 is refused: no clustering to count over
        raise ValueError(f"roots of document {table.doc_id} hold no samples (shape [0, {n}])")
    check_not_meta(roots, "roots")


def _check_roots_values(table: MentionTable, roots: Tensor) -> None:
    """ValueError unless every row of ``roots`` (``Long [S, N]``) is a clustering's entity
    roots. One host read for the range and the roots checks together."""
    n = roots.shape[1]
    outside = (roots < 0) | (roots >= n)
    # Clamped so that the gather reads only mention indices; an index outside is
    # reported by the range check, which comes first.
    inside = roots.clamp(0, max(n - 1, 0))
    later = inside > torch.arange(n, device=roots.device)
    not_root = later | (inside.gather(1, inside) != inside)
    bad_range, bad_root = torch.stack([outside.any(), not_root.any()]).tolist()
    if bad_range:
        raise ValueError(
            f"roots must be mention indices in [0, {n}) for document {table.doc_id}, "
            f"got values from {int(roots.min())} to {int(roots.max())}"
        )
    if bad_root:
        sample, i = not_root.nonzero()[0].tolist()
        r = int(roots[sample, i])
        if r > i:
            found = f"mention {i} has root {r}, a later mention"
        else:
            # A pointer to an earlier mention that is not a root: a chain's link.
            found = (
                f"mention {i} has root {r}, whose own root is {int(roots[sample, r])}; "
                "this looks like antecedents, not entity roots"
            )
        raise ValueError(
            f"roots of document {table.doc_id} are not entity roots (roots[..., i] <= i, "
            f"each its own root): in sample {sample}, {found}: pass "
            "entity_roots(antecedents), or sample with sample_entity_roots"
        )


def document_events(table: MentionTable, roots: Tensor) -> Tensor:
    """``a(d, c, e^(s))`` for every sample and country of a document: ``Bool [S, K]`` (Eq. 3).

    ``roots [S, N]`` names each mention's entity by its first mention
    (:func:`calib_metrics.models.coref.entity_roots`). Per sample and entity, the
    countries and attack flags of its mentions are summed with one scatter-add each;
    an entity fires for ``c`` when it has an attack mention, ``c`` is among its
    countries and no other country is.

    ``roots`` may be of any integer dtype; every row must be a clustering's roots: mention
    indices in ``[0, N)`` with ``roots[..., i] <= i`` that are their own roots
    (``roots.gather(-1, roots) == roots``). Antecedent vectors (what ``sample_antecedents``
    draws) fail that and are refused with a ValueError rather than read as entity ids,
    which would split an entity at every chain of two links (``2 -> 1 -> 0``). Host
    synchronisation: one, for both checks at once (the analysis is no hot path, and
    :func:`aggregate_events` reads every document's events back anyway); a refused
    ``roots`` is read again to word the error.
    """
    n, k = table.countries.shape
    _check_roots_shape(table, roots)
    roots = as_indices(roots, "roots")  # a float or bool root names no mention
    _check_roots_values(table, roots)
    s = roots.shape[0]
    device = roots.device
    if n == 0 or k == 0:
        return torch.zeros(s, k, dtype=torch.bool, device=device)
    countries = table.countries.to(device=device, dtype=torch.float32)
    attacks = table.attacks.to(device=device, dtype=torch.float32)
    has = torch.zeros(s, n, k, device=device).scatter_add_(
        1, roots[:, :, None].expand(s, n, k), countries.expand(s, n, k)
    )
    agent = torch.zeros(s, n, device=device).scatter_add_(1, roots, attacks.expand(s, n))
    has = has > 0
    single = has.sum(-1) == 1
    fires = has & (single & (agent > 0))[:, :, None]
    return fires.any(1)


@dataclass
class EventAnalysis:
    """Event indicators of a corpus and their counts per period and country.

    Attributes:
        codes: the ``C`` country codes (columns).
        periods: the ``T`` period labels, in time order (rows).
        doc_ids: the ``D`` documents, with ``doc_period [D]`` their period index
            (``-1`` for a document without a period, left out of every count).
        pair_doc, pair_code: ``Long [P]``, the (document, country) pairs that can fire.
        pair_samples: ``Bool [S, P]``, the pair's event indicator in each sample.
        exact: ``Bool [P]``, the document's clustering was given as deterministic
            (gold coreference or a 1-best clustering: one row of roots, broadcast to
            ``S > 1`` samples or, with ``S = 1``, so declared by :func:`aggregate_events`'
            ``deterministic``), so ``a(d, c)`` is exact (0 or 1); otherwise it is the
            fraction of ``S`` samples, an estimate.

    Every tensor lives on the samples' device (the roots').
    """

    codes: list[str]
    periods: list[str]
    doc_ids: list[str]
    doc_period: Tensor
    pair_doc: Tensor
    pair_code: Tensor
    pair_samples: Tensor
    exact: Tensor

    @property
    def n_samples(self) -> int:
        return self.pair_samples.shape[0]

    @property
    def left_out(self) -> list[str]:
        """The documents without a period (too coarse a date), in no count."""
        return [d for d, p in zip(self.doc_ids, self.doc_period.tolist(), strict=True) if p < 0]

    @property
    def doc_probs(self) -> Tensor:
        """``a(d, c)`` per pair: the fraction of samples with the event. ``[P]``."""
        return self.pair_samples.double().mean(0)

    def counts(self) -> Tensor:
        """Sampled ``n^(s)(t, c)``: ``Long [S, T, C]`` (Eq. 4), one ``index_add`` for all S."""
        s, t, c = self.n_samples, len(self.periods), len(self.codes)
        cell = self.doc_period.to(self.pair_doc.device)[self.pair_doc] * c + self.pair_code
        out = torch.zeros(s, t * c, dtype=torch.long, device=self.pair_samples.device)
        out.index_add_(1, cell, self.pair_samples.long())
        return out.view(s, t, c)

    def summary(self, confidence: float = 0.95) -> PosteriorSummary:
        """Sampled posterior mean, std, normal and percentile intervals, each ``[T, C]``."""
        return sample_summary(self.counts(), confidence)

    def poisson_binomial(self, confidence: float = 0.95) -> CountDistribution:
        """Exact distribution of ``n(t, c)`` given the per-document ``a(d, c)``.

        Returns pmf ``[T, C, L + 1]`` (``L`` the most candidate documents in a cell)
        and mean, variance, quantile interval ``[T, C]``.
        """
        t, c = len(self.periods), len(self.codes)
        cell = self.doc_period[self.pair_doc] * c + self.pair_code
        probs = self.doc_probs
        order = torch.argsort(cell, stable=True)
        cell, probs = cell[order], probs[order]
        n_cells = torch.bincount(cell, minlength=t * c)
        starts = torch.cumsum(n_cells, 0) - n_cells
        rank = torch.arange(cell.numel(), device=cell.device) - starts[cell]
        width = int(n_cells.max()) if cell.numel() else 0
        grid = torch.zeros(t * c, width, dtype=torch.float64, device=probs.device)
        grid[cell, rank] = probs
        dist = poisson_binomial_summary(grid, confidence)
        return CountDistribution(*(x.view(t, c, *x.shape[1:]) for x in dist))

    def totals(self) -> Tensor:
        """Sampled total events per country over all periods: ``Long [S, C]``."""
        return self.counts().sum(1)


def _check_periods(periods: Sequence[str | None]) -> None:
    """A ValueError naming the first period label that is neither a str nor None: the
    labels are sorted into time order as :func:`period_label` writes them, and an int
    beside a str had ended in a bare TypeError there (an int alone had passed)."""
    for d, p in enumerate(periods):
        if p is not None and not isinstance(p, str):
            raise ValueError(
                f"periods must hold str labels or None (no period), got "
                f"{type(p).__name__} {p!r} for document {d}; use document_period or "
                "period_label"
            )


def aggregate_events(
    tables: Sequence[MentionTable],
    roots: Sequence[Tensor | None],
    periods: Sequence[str | None],
    n_samples: int | None = None,
    *,
    deterministic: bool | None = None,
) -> EventAnalysis:
    """Collect per-document event samples into an :class:`EventAnalysis`.

    Args:
        tables: one :class:`MentionTable` per document.
        roots: per document, entity roots ``[S, N]`` (one row for a deterministic
            clustering, which is broadcast to ``S``), or ``None`` for a document that
            cannot fire (no attack or no country mention: ``a = 0`` in every sample);
            ``None`` for one that can fire is refused.
            Roots, not antecedents: ``entity_roots(antecedents)`` or
            ``sample_entity_roots``; :func:`document_events` refuses antecedents (in
            the documents it reads: those that can fire and have a period).
        periods: the period label (a str) of each document, or ``None`` for a document
            that has no period (:func:`document_period`: a year-only date and month or
            quarter periods); such a document is left out of every count.
        n_samples: ``S``; by default the largest leading dim among ``roots``.
        deterministic: whether a document's one row of roots is a deterministic
            clustering (gold, 1-best), whose ``a(d, c)`` is exact, or one sample, an
            estimate. It tells only when ``S = 1``: with more samples one row can only be
            a clustering broadcast to them. By default (None) it is deterministic unless
            ``n_samples`` is given (one sample had been read as exact).
    """
    if not len(tables) == len(roots) == len(periods):
        raise ValueError(
            "tables, roots and periods differ in length: "
            f"{len(tables)}, {len(roots)}, {len(periods)}"
        )
    _check_periods(periods)
    for table, r in zip(tables, roots, strict=True):
        if r is not None:
            _check_roots_shape(table, r)
        elif table.can_fire:
            # Its events had been dropped silently, as if it could not fire.
            raise ValueError(
                f"roots of document {table.doc_id!r} are None, but it can fire (an attack "
                "agent and a country mention): pass its entity roots"
            )
    sizes = {r.shape[0] for r in roots if r is not None}
    s = max(sizes, default=1) if n_samples is None else as_int("n_samples", n_samples, 1)
    if not sizes <= {1, s}:
        raise ValueError(f"roots must all have {s} samples (or 1), got {sorted(sizes)}")
    if deterministic is None:
        deterministic = n_samples is None
    check_flag("deterministic", deterministic)
    one_row_exact = s > 1 or deterministic
    labels = sorted({p for p in periods if p is not None})
    period_index = {p: k for k, p in enumerate(labels)}
    codes = sorted({c for t in tables for c in t.codes})
    code_index = {c: k for k, c in enumerate(codes)}
    pair_doc, pair_code, cols, exact = [], [], [], []
    for d, (table, r) in enumerate(zip(tables, roots, strict=True)):
        if r is None or not table.can_fire or periods[d] is None:
            continue
        events = document_events(table, r)  # [S or 1, K]
        for k, code in enumerate(table.codes):
            column = events[:, k]
            if not bool(column.any()):
                continue  # zero in every sample: contributes nothing to any count
            pair_doc.append(d)
            pair_code.append(code_index[code])
            cols.append(column.expand(s))
            exact.append(r.shape[0] == 1 and one_row_exact)
    samples = _stacked(cols, s, roots)
    # The indices beside the samples: counts() adds the samples into cells by them, and
    # index_add_ refuses CPU indices for CUDA samples.
    device = samples.device
    doc_period = [-1 if p is None else period_index[p] for p in periods]
    return EventAnalysis(
        codes=codes,
        periods=labels,
        doc_ids=[t.doc_id for t in tables],
        doc_period=torch.tensor(doc_period, dtype=torch.long, device=device),
        pair_doc=torch.tensor(pair_doc, dtype=torch.long, device=device),
        pair_code=torch.tensor(pair_code, dtype=torch.long, device=device),
        pair_samples=samples,
        exact=torch.tensor(exact, dtype=torch.bool, device=device),
    )


def _stacked(cols: list[Tensor], s: int, roots: Sequence[Tensor | None]) -> Tensor:
    """The pairs' event samples ``Bool [S, P]``, on the roots' device (with no pair too)."""
    if cols:
        return torch.stack(cols, 1)
    device = next((r.device for r in roots if r is not None), None)
    return torch.zeros(s, 0, dtype=torch.bool, device=device)
