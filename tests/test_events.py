"""Rules, per-sample aggregation, intervals and the GUM regression of calib_metrics.paper.events."""

from __future__ import annotations

import gzip
import io
import itertools
import math
import warnings
from types import SimpleNamespace

import events_fixtures as fx
import host_reads
import pytest
import torch

from calib_metrics.models.coref import entity_roots, sample_antecedents, sample_entity_roots
from calib_metrics.paper.coref_conllu import read_coref_documents
from calib_metrics.paper.countries import CountryLexicon
from calib_metrics.paper.events.analysis import (
    EventExtractor,
    MentionTable,
    aggregate_events,
    document_date,
    document_events,
    document_period,
    gold_antecedents,
    period_label,
    period_span,
)
from calib_metrics.paper.events.errors import (
    decision_effects,
    pairs_in_band,
    uncertain_documents,
)
from calib_metrics.paper.events.stats import (
    poisson_binomial_pmf,
    poisson_binomial_summary,
    sample_summary,
)
from calib_metrics.paper.locations import shared_data_dir


@pytest.fixture(scope="module")
def lexicon(tmp_path_factory) -> CountryLexicon:
    path = tmp_path_factory.mktemp("lex") / "test.actors.txt"
    path.write_text(fx.LEXICON)
    return CountryLexicon.load(path)


@pytest.fixture(scope="module")
def docs():
    return {d.doc_id: d for d in fx.read()}


def gold_events(doc, lexicon) -> dict[str, bool]:
    table = EventExtractor(lexicon).table(doc)
    events = document_events(table, entity_roots(gold_antecedents(doc))[None])[0]
    return dict(zip(table.codes, events.tolist(), strict=True))


def test_nmod_affiliation_and_active_attack_through_coreference(docs, lexicon):
    doc = docs["nmod_active"]
    table = EventExtractor(lexicon).table(doc)
    # mentions: Troops of France, France, the border, They
    assert table.codes == ["FRA"]
    assert table.countries[:, 0].tolist() == [True, True, False, False]
    assert table.attacks.tolist() == [False, False, False, True]
    assert gold_events(doc, lexicon) == {"FRA": True}
    # every mention a singleton: "They" carries the attack but no country
    singletons = torch.arange(len(doc.mentions))[None]
    assert not document_events(table, singletons).any()


def test_amod_affiliation_and_passive_by_agent(docs, lexicon):
    table = EventExtractor(lexicon).table(docs["amod_passive"])
    assert table.attacks.tolist() == [False, True]  # the town is the patient
    assert gold_events(docs["amod_passive"], lexicon) == {"IRQ": True}


def test_obl_agent_and_patient_is_not_agent(docs, lexicon):
    doc = docs["obl_agent"]
    table = EventExtractor(lexicon).table(doc)
    # president of the U.S. (nsubj:pass: patient), the U.S., rebels (obl:agent), He
    assert table.attacks.tolist() == [False, False, True, True]
    assert gold_events(doc, lexicon) == {"USA": True}
    # without the "He" link the president never attacks
    split = torch.tensor([[0, 1, 2, 3]])
    assert not document_events(table, split).any()


def test_entity_with_two_countries_is_excluded(docs, lexicon):
    doc = docs["two_countries"]
    assert gold_events(doc, lexicon) == {"FRA": False, "IRQ": False}
    # split apart, the Iraqi troops alone attack
    table = EventExtractor(lexicon).table(doc)
    assert document_events(table, torch.tensor([[0, 1]]))[0].tolist() == [False, True]


def test_stemming_backoff_compound_and_pronoun_us(docs, lexicon):
    doc = docs["stem_compound"]
    table = EventExtractor(lexicon).table(doc)
    assert table.codes == ["IRQ", "USA"]
    assert table.countries.tolist() == [[True, False], [False, True], [False, False]]
    assert gold_events(doc, lexicon) == {"IRQ": True, "USA": True}
    no_compound = EventExtractor(lexicon, relations=("nmod", "amod")).table(doc)
    assert no_compound.codes == ["IRQ"]


def test_city_is_not_a_country(docs, lexicon):
    assert EventExtractor(lexicon).table(docs["city"]).codes == []


def test_cities_option(tmp_path):
    path = tmp_path / "c.actors.txt"
    path.write_text(fx.LEXICON)
    assert CountryLexicon.load(path, cities=True).match("Paris") == "FRA"


def test_enhanced_subjects_are_opt_in(lexicon):
    text = fx.document(
        "xsubj",
        "2015-01-01",
        [
            [
                ("Iraq", "Iraq", "PROPN", 2, "nsubj", "Entity=(1)"),
                ("threatened", "threaten", "VERB", 0, "root"),
                ("to", "to", "PART", 4, "mark"),
                ("attack", "attack", "VERB", 2, "xcomp"),
            ]
        ],
    ).replace("\tnsubj\t_\tEntity=(1)", "\tnsubj\t2:nsubj|4:nsubj:xsubj\tEntity=(1)")
    doc = read_coref_documents(io.StringIO(text))[0]
    assert not EventExtractor(lexicon).table(doc).attacks.any()
    assert EventExtractor(lexicon, enhanced=True).table(doc).attacks.tolist() == [True]


def test_dates_and_periods():
    doc = fx.read(fx.NMOD_ACTIVE)[0]
    date = document_date(doc)
    assert [period_label(date, p) for p in ("month", "quarter", "year")] == [
        "2015-08",
        "2015Q3",
        "2015",
    ]
    with pytest.raises(ValueError, match="period"):
        period_label(date, "week")


def test_period_spans_are_to_scale_and_tile_their_year():
    for year in (2015, 2016):  # 2016 is a leap year
        days = 366 if year == 2016 else 365
        months = [period_span(f"{year}-{m:02d}") for m in range(1, 13)]
        quarters = [period_span(f"{year}Q{q}") for q in range(1, 5)]
        for spans in (months, quarters):
            assert spans[0][0] == year and spans[-1][1] == year + 1
            assert all(a[1] == b[0] for a, b in itertools.pairwise(spans))  # they touch
        assert round((months[1][1] - months[1][0]) * days) == (29 if days == 366 else 28)
        assert period_span(str(year)) == (year, year + 1)
        assert quarters[2] == (months[6][0], months[8][1])
    for bad in ("2015Q5", "2015-13", "15", "2015-8", "Q3"):
        with pytest.raises(ValueError, match="period label"):
            period_span(bad)


def test_year_only_dates_count_for_years_but_not_months_or_quarters(lexicon):
    # The France event of nmod_active, once dated to the day and once to the year only.
    dated = fx.read(fx.NMOD_ACTIVE)[0]
    year_only = fx.read(
        fx.NMOD_ACTIVE.replace("nmod_active", "year_only").replace("2015-08-21", "2015")
    )[0]
    month_only = fx.read(fx.NMOD_ACTIVE.replace("2015-08-21", "2015-08"))[0]
    assert [document_period(year_only, p) for p in ("month", "quarter", "year")] == [
        None,
        None,
        "2015",
    ]
    assert document_period(month_only, "quarter") == "2015Q3"
    ex = EventExtractor(lexicon)
    docs = [dated, year_only]
    tables = [ex.table(d) for d in docs]
    roots = [entity_roots(gold_antecedents(d))[None] for d in docs]
    for period in ("month", "quarter", "year"):
        periods = [document_period(d, period) for d in docs]
        analysis = aggregate_events(tables, roots, periods)
        counts = analysis.counts()[0]
        if period == "year":
            assert analysis.left_out == [] and analysis.periods == ["2015"]
            assert counts.tolist() == [[2]]  # both documents, in their year
        else:
            # Only the document dated to the day; nothing lands in January.
            assert analysis.left_out == ["year_only"]
            assert analysis.periods == [period_label(document_date(dated), period)]
            assert counts.tolist() == [[1]]
            assert analysis.poisson_binomial().mean.tolist() == [[1.0]]
    undated = fx.read(fx.NMOD_ACTIVE.replace("# meta::dateCreated = 2015-08-21\n", ""))[0]
    with pytest.raises(ValueError, match="no '# meta::dateCreated' date"):
        document_period(undated, "year")
    # A duck-typed document whose metadata is None reads as undated, not AttributeError.
    with pytest.raises(ValueError, match="document d has no '# meta::dateCreated' date"):
        document_period(SimpleNamespace(doc_id="d", meta=None), "year")
    with pytest.raises(ValueError, match="period"):
        document_period(dated, "week")


def test_gold_counts_have_zero_width_intervals(docs, lexicon):
    ex = EventExtractor(lexicon)
    order = list(docs.values())
    tables = [ex.table(d) for d in order]
    roots = [entity_roots(gold_antecedents(d))[None] for d in order]
    periods = [period_label(document_date(d), "quarter") for d in order]
    analysis = aggregate_events(tables, roots, periods)
    counts = analysis.counts()[0]
    assert analysis.periods == ["2015Q3", "2015Q4", "2016Q1"]
    total = dict(zip(analysis.codes, counts.sum(0).tolist(), strict=True))
    assert total == {"FRA": 1, "IRQ": 2, "USA": 2}
    s = analysis.summary()
    assert torch.equal(s.normal_lower, s.normal_upper) and torch.equal(s.mean, counts.double())
    dist = analysis.poisson_binomial()
    assert torch.equal(dist.lower, dist.upper) and torch.equal(dist.lower, counts)
    assert bool(analysis.exact.all())


def _link_doc_scores(p: float) -> torch.Tensor:
    """Scores for nmod_active: 'They' (mention 3) links to 'Troops of France' w.p. p, else NEW."""
    big = 1e4
    s = torch.full((4, 4), -big)
    s.fill_diagonal_(0.0)
    s[3, 0] = math.log(p / (1 - p))
    return s


def test_one_hot_posterior_gives_zero_width(docs, lexicon):
    doc = docs["nmod_active"]
    table = EventExtractor(lexicon).table(doc)
    scores = _link_doc_scores(0.5)
    scores[3, 0] = 1e4  # a huge margin: a one-hot posterior
    a = sample_antecedents(scores[None], 200, generator=torch.Generator().manual_seed(0))[:, 0]
    analysis = aggregate_events([table], [entity_roots(a)], ["2015"])
    s = analysis.summary()
    assert s.std.abs().max() == 0 and torch.equal(s.percentile_lower, s.percentile_upper)
    assert s.mean.sum() == 1


def test_sampled_mean_matches_exact_poisson_binomial(docs, lexicon):
    doc = docs["nmod_active"]
    table = EventExtractor(lexicon).table(doc)
    g = torch.Generator().manual_seed(1)
    true_p = torch.linspace(0.05, 0.95, 16)
    n_samples = 1000
    roots, periods = [], []
    for k, p in enumerate(true_p.tolist()):
        a = sample_antecedents(_link_doc_scores(p)[None], n_samples, generator=g)[:, 0]
        roots.append(entity_roots(a))
        periods.append("A" if k % 2 else "B")
    analysis = aggregate_events([table] * len(roots), roots, periods)
    s = analysis.summary()
    exact = poisson_binomial_summary(torch.stack([true_p[1::2], true_p[0::2]]))
    mc_error = s.std[:, 0] / math.sqrt(n_samples)
    assert torch.all((s.mean[:, 0] - exact.mean).abs() < 4 * mc_error)
    # the spread matches too (documents are independent)
    assert torch.allclose(s.std[:, 0].double() ** 2, exact.var, rtol=0.15)
    # the estimated-probability Poisson-binomial has the sampled mean exactly
    assert torch.allclose(analysis.poisson_binomial().mean[:, 0], s.mean[:, 0].double())
    assert not analysis.exact.any()


def test_poisson_binomial_against_enumeration():
    g = torch.Generator().manual_seed(0)
    p = torch.rand(3, 6, generator=g, dtype=torch.float64)
    pmf = poisson_binomial_pmf(p)
    bits = torch.tensor([[(m >> j) & 1 for j in range(6)] for m in range(64)], dtype=torch.float64)
    for row in range(3):
        weight = (bits * p[row] + (1 - bits) * (1 - p[row])).prod(-1)
        brute = torch.zeros(7, dtype=torch.float64).index_add_(0, bits.sum(-1).long(), weight)
        assert torch.allclose(pmf[row], brute)
    assert torch.allclose(pmf.sum(-1), torch.ones(3, dtype=torch.float64))
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        poisson_binomial_pmf(torch.tensor([[1.5]]))


def test_poisson_binomial_cut_at_max_count_keeps_those_counts_exact():
    """max_count keeps counts 0..max_count, each as the full pmf has it, so a sum of 10^5
    small probabilities needs no 10^5-wide pmf."""
    g = torch.Generator().manual_seed(1)
    p = torch.rand(4, 37, generator=g, dtype=torch.float64)
    full = poisson_binomial_pmf(p)
    for top in (0, 5, 36, 37, 50):
        cut = poisson_binomial_pmf(p, max_count=top)
        assert torch.allclose(cut, full[:, : top + 1], rtol=1e-12, atol=0)
    many = poisson_binomial_pmf(torch.full((1, 100_000), 1e-4, dtype=torch.float64), 20)
    binomial = [math.comb(100_000, k) * 1e-4**k * (1 - 1e-4) ** (100_000 - k) for k in range(21)]
    assert torch.allclose(many[0], torch.tensor(binomial, dtype=torch.float64), rtol=1e-9, atol=0)
    with pytest.raises(ValueError, match="max_count"):
        poisson_binomial_pmf(p, max_count=-1)


def test_sample_summary_normal_interval_is_mean_pm_196_std():
    x = torch.tensor([[0.0], [1.0], [2.0], [3.0]])
    s = sample_summary(x)
    assert torch.allclose(s.normal_upper - s.mean, 1.959964 * s.std, atol=1e-4)
    with pytest.raises(ValueError, match="confidence"):
        sample_summary(x, confidence=1.5)


@pytest.mark.parametrize("confidence", [0.95, 0.9, 0.5])
def test_percentile_interval_ends_are_attained_counts_with_the_stated_coverage(confidence):
    # Sampled counts of 12 cells: rare events (mostly 0, like GUM's) and spread ones.
    g = torch.Generator().manual_seed(0)
    n = 100
    rates = torch.linspace(0.01, 3.0, 12)
    counts = torch.poisson(rates.expand(n, -1).contiguous(), generator=g).long()
    counts[:, 0] = 0
    counts[:3, 0] = 1  # 3 of 100 samples hold one event: linear interpolation gave 0.52
    s = sample_summary(counts, confidence)
    alpha, tol = (1 - confidence) / 2, 1e-9  # tol: 1 - confidence is rounded
    for c in range(counts.shape[1]):
        column = counts[:, c]
        lo, hi = float(s.percentile_lower[c]), float(s.percentile_upper[c])
        assert lo.is_integer() and hi.is_integer(), (c, lo, hi)
        assert lo in column.tolist() and hi in column.tolist()
        inside = ((column >= lo) & (column <= hi)).double().mean()
        assert inside >= confidence - tol, (c, lo, hi, inside)
        # The tightest such ends: one count further in would leave too much outside.
        assert (column < lo).double().mean() < alpha + tol
        assert (column <= lo).double().mean() > alpha - tol
        assert (column > hi).double().mean() < alpha + tol
        assert (column >= hi).double().mean() > alpha - tol
    # 3% of the samples hold one event: more than a 95% interval may leave out above it.
    expected_upper = 1.0 if alpha < 0.03 else 0.0
    assert (float(s.percentile_lower[0]), float(s.percentile_upper[0])) == (0.0, expected_upper)


def test_uncertain_documents_name_the_deciding_link(docs, lexicon):
    doc = docs["nmod_active"]
    table = EventExtractor(lexicon).table(doc)
    scores = _link_doc_scores(0.5)
    a = sample_antecedents(scores[None], 400, generator=torch.Generator().manual_seed(3))[:, 0]
    analysis = aggregate_events([table], [entity_roots(a)], ["2015"])
    found = uncertain_documents(analysis, [doc], [table], {0: a})
    assert len(found) == 1 and found[0].code == "FRA"
    top = found[0].decisions[0]
    assert top.text == "They"
    rates = {c.text: c.event_rate for c in top.choices}
    assert rates == {"Troops of France": 1.0, "NEW": 0.0}
    assert any("attacked" in s for s in found[0].sentences)
    # with exact choice probabilities from the scores
    _, _, _, explained = decision_effects(a, analysis.pair_samples[:, 0])
    assert int(explained.argmax()) == 3


def test_uncertain_documents_give_each_choice_its_sample_count(docs, lexicon):
    """A choice's event rate was listed without the number of samples behind it, so a rate
    of 3 samples (no usable rate) read like one of 300."""
    doc = docs["nmod_active"]
    table = EventExtractor(lexicon).table(doc)
    a = sample_antecedents(
        _link_doc_scores(0.5)[None], 30, generator=torch.Generator().manual_seed(5)
    )[:, 0]
    analysis = aggregate_events([table], [entity_roots(a)], ["2015"])
    (found,) = uncertain_documents(analysis, [doc], [table], {0: a}, choices=5, min_prob=0.0)
    listed = [(dec.mention, ch) for dec in found.decisions for ch in dec.choices]
    assert listed
    for i, ch in listed:
        j = i if ch.antecedent is None else ch.antecedent
        assert ch.support == int((a[:, i] == j).sum()) > 0


def test_pairs_in_band_are_every_uncertain_pair_closest_to_a_half_first():
    """uncertain_documents cut its list at ``top`` and said nothing of the rest: the pairs
    in the band are now counted where they are chosen."""
    probs = torch.tensor([0.5, 0.04, 0.3, 0.95, 0.6, 0.05])
    found = pairs_in_band(SimpleNamespace(doc_probs=probs), (0.05, 0.95))
    assert found.tolist() == [0, 4, 2, 3, 5]
    with pytest.raises(ValueError, match="band must satisfy"):
        pairs_in_band(SimpleNamespace(doc_probs=probs), (0.9, 0.1))


def test_decision_effects_weigh_supported_choices_by_their_own_probability():
    """A choice sampled too rarely adds nothing, and the supported ones keep their own
    P(a_i = j): renormalising had given the one supported choice's (r_j - m)^2, 0.09,
    the whole weight, as if the decision were that choice for sure."""
    a = torch.tensor([[0, 0, 0]] * 5 + [[0, 0, 1]] * 3 + [[0, 0, 2]] * 2)
    events = torch.tensor([0] * 5 + [1] * 3 + [0] * 2)
    probs = torch.tensor([[1.0, 0, 0], [0.5, 0.5, 0], [0.5, 0.3, 0.2]])
    every = decision_effects(a, events, probs, min_support=1)[3]
    supported = decision_effects(a, events, probs, min_support=5)[3]
    # sum_j P(a_i = j) (rate_j - m)^2, m = 0.3: 0.5 * 0.09 + 0.3 * 0.49 + 0.2 * 0.09
    assert every.tolist() == pytest.approx([0.0, 0.0, 0.21])
    assert supported.tolist() == pytest.approx([0.0, 0.0, 0.5 * 0.09])  # a lower bound


@pytest.mark.parametrize("periods", [[2015], ["2015", 2016], [2015.0, None]])
def test_aggregate_refuses_period_labels_that_are_no_str(docs, lexicon, periods):
    """A mix of int and str labels had ended in a bare TypeError while sorting them, and a
    single int had been taken as a label."""
    table = EventExtractor(lexicon).table(docs["nmod_active"])
    roots = [entity_roots(gold_antecedents(docs["nmod_active"]))[None]] * len(periods)
    with pytest.raises(ValueError, match="periods must hold str labels or None"):
        aggregate_events([table] * len(periods), roots, periods)
    assert aggregate_events([table], roots[:1], ["2015"]).periods == ["2015"]


def test_aggregate_rejects_mismatched_inputs(docs, lexicon):
    table = EventExtractor(lexicon).table(docs["nmod_active"])
    with pytest.raises(ValueError, match="length"):
        aggregate_events([table], [], ["2015"])
    with pytest.raises(ValueError, match="roots must be"):
        document_events(table, torch.zeros(2, 3, dtype=torch.long))


@pytest.mark.parametrize(
    ("roots", "message"),
    [
        (torch.tensor([[0, 5, 0, 0]]), r"roots must be mention indices in \[0, 4\)"),
        (torch.tensor([[0, 0, 0, 0], [0, -1, 2, 3]]), r"roots must be mention indices in \[0, 4\)"),
        (
            torch.tensor([[0.0, 0.0, 2.0, 3.0]]),
            "roots must be an integer tensor, got torch.float32",
        ),
        (torch.tensor([[True, False, False, False]]), "roots must be an integer tensor"),
        (torch.zeros(1, 4, dtype=torch.long, device="meta"), "roots is on the meta device"),
        ([[0, 0, 2, 3]], "roots must be a torch.Tensor"),
    ],
)
def test_document_events_refuses_roots_that_name_no_mention(docs, lexicon, roots, message):
    """Only the shape of roots had been checked: an index past the mentions, a float or a
    meta tensor failed in scatter_add_ (RuntimeError), a list on .ndim (AttributeError)."""
    table = EventExtractor(lexicon).table(docs["nmod_active"])
    assert document_events(table, torch.tensor([[0, 0, 2, 0]], dtype=torch.int32)).all()
    with pytest.raises(ValueError, match=message):
        document_events(table, roots)


def test_document_events_refuses_antecedents_for_roots(docs, lexicon):
    """Only the range of roots had been checked: antecedents passed for roots were read as
    entity ids, so the chain They -> the border -> Troops of France lost the event."""
    table = EventExtractor(lexicon).table(docs["nmod_active"])
    antecedents = torch.tensor([[0, 1, 0, 2]])
    assert document_events(table, entity_roots(antecedents)).tolist() == [[True]]
    mix_up = (
        r"in sample 0, mention 3 has root 2, whose own root is 0; this looks like "
        r"antecedents, not entity roots: pass entity_roots\(antecedents\), or sample with "
        r"sample_entity_roots"
    )
    with pytest.raises(ValueError, match=mix_up):
        document_events(table, antecedents)
    with pytest.raises(ValueError, match="mention 0 has root 1, a later mention"):
        document_events(table, torch.tensor([[1, 1, 2, 3]]))
    # Sampled: the draws hold chains (a[i] = j with a[j] != j), their roots do not.
    scores = torch.zeros(2, 4, 4)
    drawn = sample_antecedents(scores, 50, generator=torch.Generator().manual_seed(0))[:, 1]
    roots = sample_entity_roots(scores, 50, generator=torch.Generator().manual_seed(0))[:, 1]
    assert not roots.is_contiguous() and torch.equal(roots, entity_roots(drawn))
    with pytest.raises(ValueError, match="looks like antecedents, not entity roots"):
        aggregate_events([table], [drawn], ["2015"])
    assert aggregate_events([table], [roots], ["2015"]).n_samples == 50
    # Both checks, range and roots, in the one host read the docstring states.
    assert host_reads.count_reads(lambda: document_events(table, roots)) == 1


def test_aggregate_events_refuses_no_roots_for_a_document_that_can_fire(docs, lexicon):
    """None (meant for a document that cannot fire) had dropped its events silently."""
    tables = [EventExtractor(lexicon).table(docs["nmod_active"])]
    assert tables[0].can_fire
    with pytest.raises(ValueError, match=r"^roots of document 'nmod_active' are None, but it"):
        aggregate_events(tables, [None], ["2015"])
    made_up = MentionTable("a", ["X"], torch.tensor([[True], [False]]), torch.tensor([False, True]))
    with pytest.raises(ValueError, match="roots of document 'a' are None, but it can fire"):
        aggregate_events([made_up], [None], ["2001"])
    quiet = MentionTable("b", ["X"], torch.tensor([[True], [False]]), torch.tensor([False, False]))
    assert aggregate_events([quiet], [None], ["2001"]).counts().tolist() == [[[0]]]


def test_the_summary_of_no_documents_warns_nothing():
    """sample_summary of counts with no cells had warned "std(): degrees of freedom is
    <= 0" (torch's empty reduction); the values are what they were: empty [T, C]."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        summary = aggregate_events([], [], []).summary()
        again = sample_summary(torch.zeros(5, 0, 3, dtype=torch.long))
    for field in summary:  # counts are summarised in float64
        assert field.shape == (0, 0) and field.dtype == torch.float64
    for field in again:
        assert field.shape == (0, 3) and field.dtype == torch.float64


def test_the_summary_of_counts_is_float64():
    """It had been float32: a mean of 77 in 1000 written to results.json as
    0.07699999958276749, and counts past 2**24 lost their last digits."""
    s = sample_summary(torch.tensor([1] * 77 + [0] * 923)[:, None])
    assert s.mean.dtype == torch.float64 and s.mean.item() == 0.077
    assert sample_summary(torch.tensor([[16777217], [16777217]])).mean.item() == 16777217


def _gum_document(doc_id: str):
    root = shared_data_dir()
    path = None if root is None else root / "ud-english-gum" / "en_gum-ud-train.conllu.gz"
    if path is None or not path.exists():
        pytest.skip("shared GUM data (ud-english-gum) not available")
    with gzip.open(path, "rb") as f:
        data = f.read()
    start = data.find(f"# newdoc id = {doc_id}\n".encode())
    assert start >= 0, f"{doc_id} not in {path}"
    end = data.find(b"# newdoc id", start + 1)
    text = data[start : end if end >= 0 else len(data)].decode("utf-8")
    return read_coref_documents(io.StringIO(text))[0]


def test_gum_news_korea_event_needs_coreference():
    root = shared_data_dir()
    lex_dir = None if root is None else root / "phoenix-country-actors"
    if lex_dir is None or not lex_dir.is_dir():
        pytest.skip("shared Phoenix lexicon (phoenix-country-actors) not available")
    doc = _gum_document("GUM_news_korea")
    table = EventExtractor(CountryLexicon.load(lex_dir)).table(doc)
    agents = [" ".join(doc.mention_words(doc.mentions[i])) for i in table.attacks.nonzero()[:, 0]]
    assert agents == ["it"]
    gold = document_events(table, entity_roots(gold_antecedents(doc))[None])[0]
    assert gold[table.codes.index("PRK")] and gold.sum() == 1
    singletons = torch.arange(len(doc.mentions))[None]
    assert not document_events(table, singletons).any()


@pytest.mark.parametrize(
    ("roots", "n_samples", "message"),
    [
        ([[0, 0, 2, 3]], None, "roots must be a torch.Tensor"),
        (torch.tensor(0), None, r"roots must be \[S, 4\]"),
        (torch.zeros(2, 4, dtype=torch.long), True, "n_samples must be"),
        (torch.zeros(2, 4, dtype=torch.long), -3, "n_samples must be"),
        (torch.zeros(2, 4, dtype=torch.long), 0, "n_samples must be"),
        # Roots of no samples had been taken (n_samples 0, a mean of 0 for the candidate).
        (torch.zeros(0, 4, dtype=torch.long), None, r"hold no samples \(shape \[0, 4\]\)"),
    ],
)
def test_aggregate_events_checks_roots_and_n_samples_up_front(docs, lexicon, roots, n_samples,
                                                              message):  # fmt: skip
    """aggregate_events read roots' shape before document_events checked it (AttributeError,
    IndexError), and took n_samples=0 as the default, True and -3 to torch's errors."""
    table = EventExtractor(lexicon).table(docs["nmod_active"])
    with pytest.raises(ValueError, match=message):
        aggregate_events([table], [roots], ["2015-01"], n_samples=n_samples)


def test_a_placeholder_date_has_no_period_in_the_api_as_on_the_command_line() -> None:
    """docs/events.md's API example had counted GUM's 2000-01-01 conversations in 2000Q1,
    bringing back the false CHN event the command leaves out (--unknown-dates)."""
    placeholder = SimpleNamespace(doc_id="conversation", meta={"dateCreated": "2000-01-01"})
    assert [document_period(placeholder, p) for p in ("month", "quarter", "year")] == [None] * 3
    assert document_period(placeholder, "quarter", unknown=()) == "2000Q1"
    assert document_period(placeholder, "year", unknown=["1999"]) == "2000"
    assert document_period(placeholder, "year", unknown="2000-01-01") is None  # one date
