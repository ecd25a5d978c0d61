"""End to end: ``calib-metrics reproduce events`` on a tiny hand-written corpus."""

from __future__ import annotations

import argparse
import datetime
import gzip
import json
import math
import re
from pathlib import Path
from types import SimpleNamespace

import events_fixtures as fx
import pytest
import torch
from cli_runs import run_cli

from calib_metrics import plot
from calib_metrics.models.coref_ranker import AntecedentRanker
from calib_metrics.paper.events import experiment
from calib_metrics.paper.events.stats import sample_summary
from calib_metrics.wording import counted


def _args(tmp_path: Path, *extra: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    experiment.add_arguments(parser)
    data = tmp_path / "corpus"
    if not data.exists():
        data.mkdir()
        (data / "tiny-train.conllu").write_text(fx.ALL)
        lex = tmp_path / "lexicon"
        lex.mkdir()
        (lex / "Phoenix.Countries.actors.txt.gz").write_bytes(gzip.compress(fx.LEXICON.encode()))
    base = [
        "--data",
        str(data),
        "--lexicon",
        str(tmp_path / "lexicon"),
        "--out",
        str(tmp_path / "out"),
        "--samples",
        "200",
        "--period",
        "quarter",
    ]
    return parser.parse_args(base + list(extra))


def test_run_with_a_saved_uniform_model(tmp_path):
    model = AntecedentRanker(n_bits=8).save(tmp_path / "ranker.pt")  # zero weights: uniform
    results = experiment.run(_args(tmp_path, "--model", str(model)))
    out = tmp_path / "out"
    saved = json.loads((out / "results.json").read_text())
    assert saved["documents"] == 6 and saved["candidate_documents"]
    rows = {r["country"]: r for r in saved["countries"]}
    assert {c: rows[c]["gold"] for c in ("FRA", "IRQ", "USA")} == {"FRA": 1, "IRQ": 2, "USA": 2}
    for r in rows.values():
        lo, hi = r["percentile"]
        assert lo <= r["mean"] <= hi
        assert isinstance(lo, int) and isinstance(hi, int)  # ends are attained counts
        assert r["normal"][0] <= r["mean"] <= r["normal"][1]
        assert r["exact_mean"] == pytest.approx(r["mean"], abs=1e-6)
    # a uniform posterior makes "They" -> "Troops of France" a coin flip
    fra = [d for d in saved["document_events"] if d["country"] == "FRA"]
    assert 0.2 < fra[0]["prob"] < 0.8 and fra[0]["gold"] == 1
    assert any(u["doc_id"] == "nmod_active" for u in saved["uncertain"])
    assert results["cells"] and all("exact_interval" in c for c in results["cells"])
    md = (out / "results.md").read_text()
    assert "Uncertain documents" in md and "nmod_active" in md
    for fig in saved["figures"]:
        assert (out / fig).stat().st_size > 0
    assert any(Path(f).name == "events_overlay.png" for f in saved["figures"])
    # Every lexicon match is listed for an audit, and the totals agree with the list.
    lines = (out / "matches.tsv").read_text().splitlines()
    assert lines[0] == "count\tcode\ttext"
    listed = [line.split("\t") for line in lines[1:]]
    assert sum(int(n) for n, _, _ in listed) == saved["lexicon_matches"] > 0
    assert len(listed) == saved["distinct_matches"]
    assert [int(n) for n, _, _ in listed] == sorted((int(n) for n, _, _ in listed), reverse=True)
    assert {code for _, code, _ in listed} >= {"FRA", "IRQ", "USA"}
    assert f"matched {saved['lexicon_matches']} words" in md
    # The rule and the ranker behind the numbers (two such runs had written one header).
    assert (
        "Attack rule: basic UD subjects (`--enhanced` adds nsubj:xsubj). Ranker: loaded from "
        f"`{model}`." in md
    )


def test_the_uncertain_list_says_how_many_pairs_the_band_holds(tmp_path, capsys, monkeypatch):
    """The list was cut at 10 pairs without a word: 11 (document, country) pairs were in
    the band, 10 listed, and results.md, results.json and stdout said nothing of the 11th."""
    monkeypatch.setattr(experiment, "UNCERTAIN_TOP", 2)
    model = AntecedentRanker(n_bits=8).save(tmp_path / "ranker.pt")
    run = experiment.run(_args(tmp_path, "--model", str(model), "--samples", "20"))
    in_band = [e for e in run["document_events"] if 0.05 <= e["prob"] <= 0.95]
    assert len(in_band) > 2 and len(run["uncertain"]) == 2
    saved = json.loads((tmp_path / "out" / "results.json").read_text())
    assert saved["uncertain_in_band"] == len(in_band)
    md = (tmp_path / "out" / "results.md").read_text()
    assert (
        f"Listed: the 2 most uncertain of the {len(in_band)} (document, country) pairs in the "
        "band, each with at most 3 coreference decisions" in md
    )
    assert (
        f"  uncertain: {len(in_band)} (document, country) pairs with 0.05 <= a(d, c) <= 0.95 "
        "(the 2 closest to 0.5 in results.md)\n" in capsys.readouterr().out
    )
    # Nothing cut: the list says it holds them all.
    monkeypatch.setattr(experiment, "UNCERTAIN_TOP", 10)
    run = experiment.run(_args(tmp_path, "--model", str(model), "--samples", "20"))
    assert len(run["uncertain"]) == run["uncertain_in_band"] == len(in_band)
    md = (tmp_path / "out" / "results.md").read_text()
    assert f"Listed: the {len(in_band)} (document, country) pairs in the band, each" in md
    assert "(all in results.md)" in capsys.readouterr().out


def test_an_event_rate_of_too_few_samples_is_marked_with_its_count(tmp_path):
    """A choice made in fewer than 5 samples "has no usable rate" (docs/events.md), yet
    results.md printed its rate like any other (0.33 from 3 samples) and no sample count."""
    model = AntecedentRanker(n_bits=8).save(tmp_path / "ranker.pt")
    experiment.run(_args(tmp_path, "--model", str(model), "--samples", "20"))
    saved = json.loads((tmp_path / "out" / "results.json").read_text())
    assert saved["min_support"] == 5
    md = (tmp_path / "out" / "results.md").read_text().splitlines()
    supports = []
    for u in saved["uncertain"]:
        section = md[md.index(f"### {u['doc_id']} — {u['code']}, P(event) = {u['prob']:.2f}") :]
        for dec in u["decisions"]:
            line = next(x for x in section if x.startswith(f"- mention {dec['text']!r} "))
            for ch in dec["choices"]:
                supports.append(ch["support"])
                if ch["support"] < 5:
                    assert f"P={ch['prob']:.2f}, P(event|choice)=— (n={ch['support']} < 5)" in line
                else:
                    rate = f"P(event|choice)={ch['event_rate']:.2f} (n={ch['support']})"
                    assert f"P={ch['prob']:.2f}, {rate}" in line
    assert min(supports) < 5 <= max(supports)  # both kinds are shown
    assert "a choice made in fewer than 5 samples has no usable rate (—)" in "\n".join(md)


def test_a_corpus_without_candidate_documents_says_so(tmp_path, capsys):
    """results.md had written empty tables, then "None: no candidate document's event
    probability lies in [0.05, 0.95]", and "1 documents"."""
    _args(tmp_path)  # writes the corpus and the lexicon
    (tmp_path / "corpus" / "tiny-train.conllu").write_text(fx.CITY)  # no country named
    model = AntecedentRanker(n_bits=8).save(tmp_path / "ranker.pt")
    experiment.run(_args(tmp_path, "--model", str(model)))
    md = (tmp_path / "out" / "results.md").read_text()
    assert (
        "No candidate documents: no document has both an attack-agent mention and a country "
        "mention, so no clustering gives an event and every count is 0." in md
    )
    assert "|---|" not in md and "None: no candidate" not in md
    assert "— 1 document, 1 quarter period, 1 attack-agent mention, 0 candidate documents" in md
    out = capsys.readouterr().out
    assert "1 document, 1 attack-agent mention, 0 candidate documents\n" in out
    assert "events: 1 document, 1 attack-agent mention, 0 candidates, S=200\n" in out
    assert "no candidate documents: no clustering gives an event" in out


def test_results_give_the_interval_level_with_all_its_digits(tmp_path):
    """results.md had said "98% intervals" for --confidence 0.975 (its figures 97.5%)."""
    model = AntecedentRanker(n_bits=8).save(tmp_path / "ranker.pt")
    experiment.run(_args(tmp_path, "--model", str(model), "--confidence", "0.975"))
    assert "97.5% intervals" in (tmp_path / "out" / "results.md").read_text()


def test_the_normal_interval_column_names_the_z_it_used(tmp_path):
    """results.md's tables had said "normal m±1.96s" at --confidence 0.8 too, beside ends
    1.28 standard deviations from the mean."""
    model = AntecedentRanker(n_bits=8).save(tmp_path / "ranker.pt")
    run = experiment.run(_args(tmp_path, "--model", str(model), "--confidence", "0.8"))
    md = (tmp_path / "out" / "results.md").read_text()
    assert "m±1.96s" not in md
    header = [line for line in md.splitlines() if line.startswith("| country |")]
    assert len(header) == 1 and "| normal m±1.28s |" in header[0]
    assert "| normal m±1.28s |" in next(l for l in md.splitlines() if l.startswith("| period"))
    row = next(r for r in run["countries"] if r["std"] > 0)
    assert row["normal"][1] - row["mean"] == pytest.approx(1.2816 * row["std"], abs=1e-3)


def test_run_trains_a_ranker_when_no_model_is_given(tmp_path):
    results = experiment.run(_args(tmp_path, "--quick", "--epochs", "1", "--n-bits", "10"))
    assert (tmp_path / "out" / "ranker.pt").exists()
    assert results["ranker"]["train_documents"] >= 1
    assert results["samples"] == 200  # given by _args: --quick sets only the defaults
    md = (tmp_path / "out" / "results.md").read_text()
    saved = tmp_path / "out" / "ranker.pt"
    trained = counted(results["ranker"]["train_documents"], "document")
    assert f"Ranker: trained here, 1 epoch on {trained} (saved to `{saved}`)." in md


def test_year_only_documents_are_left_out_of_months_and_quarters(tmp_path, capsys):
    # The France event once more, dated only by its year: a quarter cannot hold it.
    year_only = fx.NMOD_ACTIVE.replace("nmod_active", "year_only").replace("2015-08-21", "2016")
    _args(tmp_path)  # writes the corpus and the lexicon
    (tmp_path / "corpus" / "tiny-train.conllu").write_text(fx.ALL + year_only)
    model = AntecedentRanker(n_bits=8).save(tmp_path / "ranker.pt")
    quarter = experiment.run(_args(tmp_path, "--model", str(model)))
    gold = {r["country"]: r["gold"] for r in quarter["countries"]}
    assert gold["FRA"] == 1  # nmod_active only; the year-only copy is in no quarter
    assert all(c["period"] != "2016Q1" or c["country"] != "FRA" for c in quarter["cells"])
    assert quarter["left_out_documents"] == ["year_only"]
    assert "1 of 7 documents is dated by year only" in capsys.readouterr().err
    md = (tmp_path / "out" / "results.md").read_text()
    assert "1 of 7 documents is dated by year only" in md and "year_only" in md
    # It would have been a candidate (an attack by a French agent): the note says so.
    assert "1 of them could hold an event (candidates): year_only." in md
    year = experiment.run(_args(tmp_path, "--model", str(model), "--period", "year"))
    assert year["left_out_documents"] == []
    assert {r["country"]: r["gold"] for r in year["countries"]}["FRA"] == 2
    assert "dated by year only" not in capsys.readouterr().err


def _quarter_span(label: str) -> tuple[float, float]:
    """A quarter ("2015Q3") as decimal years, by days."""
    year, q = int(label[:4]), int(label[-1])

    def decimal(y: int, month: int) -> float:
        if month > 12:
            y, month = y + 1, 1
        start, next_year = datetime.date(y, 1, 1), datetime.date(y + 1, 1, 1)
        return y + (datetime.date(y, month, 1) - start).days / (next_year - start).days

    return decimal(year, 3 * q - 2), decimal(year, 3 * q + 1)


def test_figures_are_to_scale_in_time(tmp_path, monkeypatch):
    # The fixture's quarters 2015Q3-2016Q1 touch; a France event in 2018Q2 lies two
    # years on, and the figure must show those two years as a gap.
    later = fx.NMOD_ACTIVE.replace("nmod_active", "later").replace("2015-08-21", "2018-05-02")
    _args(tmp_path)
    (tmp_path / "corpus" / "tiny-train.conllu").write_text(fx.ALL + later)
    drawn = {}
    real = plot.posterior_time_series

    def record(periods, *args, **kwargs):
        fig, ax = real(periods, *args, **kwargs)
        mean = next(line for line in ax.lines if line.get_label().endswith("posterior mean"))
        drawn.setdefault(kwargs.get("label"), (list(periods), mean.get_xdata().tolist()))
        return fig, ax

    monkeypatch.setattr(plot, "posterior_time_series", record)
    model = AntecedentRanker(n_bits=8).save(tmp_path / "ranker.pt")
    experiment.run(_args(tmp_path, "--model", str(model)))
    periods, x = drawn["FRA"]
    assert periods == ["2015Q3", "2015Q4", "2016Q1", "2018Q2"]
    spans = [_quarter_span(p) for p in periods]
    steps = [v for v in x if not math.isnan(v)]
    # Every period drawn from its start to its end in decimal years, and the run
    # breaks (a NaN) between 2016Q1 and 2018Q2 instead of closing up.
    assert steps == [spans[0][0], spans[1][0], spans[2][0], spans[2][1], spans[3][0], spans[3][1]]
    assert sum(math.isnan(v) for v in x) == 1
    assert spans[3][0] - spans[2][1] == pytest.approx(2.0, abs=0.01)  # April 2016 to April 2018


def _drawn_bands(tmp_path, monkeypatch, *extra: str) -> tuple[dict, dict]:
    """Each country figure's band as drawn, by period, and the run's results."""
    drawn = {}
    real = plot.posterior_time_series

    def record(periods, mean, lower, upper, **kwargs):
        if kwargs.get("ax") is None:  # a country's own figure, not the overlay
            bands = zip(periods, lower.tolist(), upper.tolist(), strict=True)
            drawn[kwargs["label"]] = ({p: (lo, hi) for p, lo, hi in bands}, kwargs["interval"])
        return real(periods, mean, lower, upper, **kwargs)

    monkeypatch.setattr(plot, "posterior_time_series", record)
    model = AntecedentRanker(n_bits=8).save(tmp_path / "ranker.pt")
    return drawn, experiment.run(_args(tmp_path, "--model", str(model), *extra))


def test_figures_shade_the_percentile_interval_and_the_papers_on_request(tmp_path, monkeypatch):
    """The figures shaded only the normal interval m ± z s, drawn from 0: at GUM's PRK (mean
    0.06) it reached 0.53, and the gold count 1 lay above it, while the samples' own
    (percentile) interval, in the table only, was [0, 1]."""
    drawn, run = _drawn_bands(tmp_path, monkeypatch, "--samples", "20")
    assert run["figure_interval"] == "percentile" and drawn
    for c in run["cells"]:
        if c["country"] in drawn:
            band, kind = drawn[c["country"]]
            assert band[c["period"]] == tuple(c["percentile"])
            assert kind == "percentile, over posterior samples"
    # A band that differs from the normal one, so that the check above tells them apart.
    assert any(tuple(c["percentile"]) != tuple(c["normal"]) for c in run["cells"])
    md = (tmp_path / "out" / "results.md").read_text()
    assert "The figures shade the 95% percentile interval of the sampled counts" in md
    # The paper's interval, drawn from 0, with --figure-interval normal.
    drawn, run = _drawn_bands(
        tmp_path, monkeypatch, "--samples", "20", "--figure-interval", "normal"
    )
    assert run["figure_interval"] == "normal"
    for c in run["cells"]:
        if c["country"] in drawn:
            band, kind = drawn[c["country"]]
            assert band[c["period"]] == pytest.approx((max(c["normal"][0], 0), c["normal"][1]))
            assert kind == "normal, over posterior samples"
    md = (tmp_path / "out" / "results.md").read_text()
    assert "The figures shade the paper's 95% normal interval m ± 1.96 s, drawn from 0" in md


def test_a_figure_shows_a_period_whose_mean_lies_above_its_band(tmp_path, monkeypatch):
    """An event in fewer samples than the band leaves out (2 of 100: a mean of 0.02, a
    95% percentile band of [0, 0]) is still a period to show. Without it a figure had
    no active period and showed every one: GUM's NZL figure spanned 1895-2024, and its
    0.02 step was lost in it."""
    periods = [str(year) for year in range(2000, 2020)]
    samples = torch.zeros(100, len(periods), 1)
    samples[:2, 10, 0] = 1  # 2010
    summary = sample_summary(samples)
    assert summary.percentile_upper[10, 0] == 0 and summary.mean[10, 0] > 0
    drawn = {}
    real = plot.posterior_time_series

    def record(periods, mean, *args, **kwargs):
        drawn[kwargs["label"]] = (list(periods), mean.tolist())
        return real(periods, mean, *args, **kwargs)

    monkeypatch.setattr(plot, "posterior_time_series", record)
    none = torch.zeros(len(periods), 1)  # no gold and no 1-best event
    analysis = SimpleNamespace(periods=periods, codes=["NZL"])
    assert experiment._figures(analysis, summary, none, none, [0], tmp_path, 0.95) == [
        "events_NZL.png"
    ]
    shown, mean = drawn["NZL"]
    assert shown == [str(year) for year in range(2007, 2014)]  # 2010, 3 periods either side
    assert mean[3] == pytest.approx(0.02)


def test_bad_input_raises(tmp_path):
    for samples in ("0", "1"):  # one sample's "95% interval" had been [x, x]
        with pytest.raises(ValueError, match=f"--samples must be an integer >= 2, got {samples}"):
            experiment.run(_args(tmp_path, "--samples", samples))
    parser = argparse.ArgumentParser()
    experiment.add_arguments(parser)
    args = parser.parse_args(["--data", str(tmp_path / "nowhere"), "--out", str(tmp_path / "o")])
    with pytest.raises(FileNotFoundError):
        experiment.run(args)


def test_a_corpus_dated_by_years_only_has_no_quarters_and_says_so(tmp_path):
    # Every document left out of the quarters had run to empty tables and a torch warning.
    _args(tmp_path)
    corpus = tmp_path / "corpus" / "tiny-train.conllu"
    years_only = re.sub(r"(dateCreated = \d{4})-\d\d-\d\d", r"\1", corpus.read_text())
    corpus.write_text(years_only)
    with pytest.raises(
        ValueError,
        match=r"none of the 6 documents has a quarter: 6 dated by year only "
        r"\(use --period year\)$",
    ):
        experiment.run(_args(tmp_path))
    # Every date unknown: no period helps, and the message does not suggest one.
    corpus.write_text(re.sub(r"dateCreated = \d{4}", "dateCreated = 2000-01-01", years_only))
    with pytest.raises(
        ValueError, match=r"none of the 6 documents has a year: 6 with an unknown date \("
    ):
        experiment.run(_args(tmp_path, "--period", "year"))


def test_documents_of_an_unknown_date_are_in_no_period(tmp_path, capsys):
    # GUM dates 15 documents 2000-01-01, a placeholder: they were counted in the year
    # 2000 (a CHN false positive among them).
    _args(tmp_path)
    corpus = tmp_path / "corpus" / "tiny-train.conllu"
    placeholder = fx.NMOD_ACTIVE.replace("nmod_active", "placeholder")
    corpus.write_text(fx.ALL + placeholder.replace("2015-08-21", "2000-01-01"))
    model = str(AntecedentRanker(n_bits=8).save(tmp_path / "ranker.pt"))
    for period in ("year", "quarter"):
        run = experiment.run(_args(tmp_path, "--model", model, "--period", period))
        assert run["undated_documents"] == ["placeholder"] and run["unknown_dates"] == [
            "2000-01-01"
        ]
        assert run["left_out_documents"] == []
        assert {r["country"]: r["gold"] for r in run["countries"]}["FRA"] == 1
        assert not any(c["period"].startswith("2000") for c in run["cells"])
        assert "1 of 7 documents is dated 2000-01-01, an unknown date" in capsys.readouterr().err
        md = (tmp_path / "out" / "results.md").read_text()
        assert "1 of 7 documents is dated 2000-01-01, which stands for an unknown date" in md
        assert "the tables below leave them out" in md
        assert "1 of them could hold an event (candidates): placeholder." in md
    # Membership is the document's own date, not its id: a dated namesake still counts.
    namesake = fx.NMOD_ACTIVE.replace("nmod_active", "placeholder").replace("2015-08-21", "2016")
    corpus.write_text(fx.ALL + placeholder.replace("2015-08-21", "2000-01-01") + namesake)
    run = experiment.run(_args(tmp_path, "--model", model, "--period", "year"))
    assert run["undated_documents"] == ["placeholder"]
    assert {r["country"]: r["gold"] for r in run["countries"]}["FRA"] == 2
    corpus.write_text(fx.ALL + placeholder.replace("2015-08-21", "2000-01-01"))
    counted = experiment.run(
        _args(tmp_path, "--model", model, "--period", "year", "--unknown-dates")
    )
    assert counted["undated_documents"] == []
    assert {r["country"]: r["gold"] for r in counted["countries"]}["FRA"] == 2
    assert any(c["period"] == "2000" and c["country"] == "FRA" for c in counted["cells"])


def test_any_case_matches_lower_cased_names(tmp_path):
    # A lower-cased corpus had no way, on the command line, back to case-insensitive names.
    _args(tmp_path)
    corpus = tmp_path / "corpus" / "tiny-train.conllu"
    corpus.write_text(corpus.read_text().replace("France", "france").replace("French", "french"))
    model = str(AntecedentRanker(n_bits=8).save(tmp_path / "ranker.pt"))
    strict = experiment.run(_args(tmp_path, "--model", model))
    loose = experiment.run(_args(tmp_path, "--model", model, "--any-case"))
    assert "FRA" not in {r["country"] for r in strict["countries"]}
    assert {r["country"]: r["gold"] for r in loose["countries"]}["FRA"] >= 1


def test_an_unknown_date_no_document_has_is_said_at_once(tmp_path, capsys):
    """A date no document is dated by (one the corpus writes otherwise) had been taken in
    silence, and the documents it was meant to leave out stayed in their periods."""
    _args(tmp_path)
    corpus = tmp_path / "corpus" / "tiny-train.conllu"
    placeholder = fx.NMOD_ACTIVE.replace("nmod_active", "placeholder")
    corpus.write_text(fx.ALL + placeholder.replace("2015-08-21", "2000-01-01"))
    model = str(AntecedentRanker(n_bits=8).save(tmp_path / "ranker.pt"))
    paths = ["--data", tmp_path / "corpus", "--lexicon", tmp_path / "lexicon"]
    argv = ["reproduce", "events", *paths, "--out", tmp_path / "out", "--model", model]
    code, _, err = run_cli(capsys, *argv, "--samples", "20", "--unknown-dates", "1999-12-31")
    assert code == 0, err
    warned = [line for line in err.splitlines() if "warning" in line]
    assert warned == [
        "calib-metrics: warning: --unknown-dates: no document is dated 1999-12-31 (dates are "
        "compared as written in # meta::dateCreated), so that date leaves none out"
    ]
    saved = json.loads((tmp_path / "out" / "results.json").read_text())
    assert saved["undated_documents"] == [] and saved["unknown_dates"] == ["1999-12-31"]
    # A date that some document has is not warned about, beside one that none has.
    with pytest.warns(UserWarning, match=r"no document is dated 1999-12-31 \(") as caught:
        run = experiment.run(
            _args(tmp_path, "--model", model, "--unknown-dates", "2000-01-01", "1999-12-31")
        )
    assert len(caught) == 1 and run["undated_documents"] == ["placeholder"]


def test_an_unknown_date_written_as_the_corpus_writes_it(tmp_path):
    """A corpus whose metadata writes 2000-1-1 (which the reader takes) could not name it:
    the date check asked for two digits, and 2000-01-01 matched nothing."""
    _args(tmp_path)
    corpus = tmp_path / "corpus" / "tiny-train.conllu"
    placeholder = fx.NMOD_ACTIVE.replace("nmod_active", "placeholder")
    corpus.write_text(fx.ALL + placeholder.replace("2015-08-21", "2000-1-1"))
    model = str(AntecedentRanker(n_bits=8).save(tmp_path / "ranker.pt"))
    args = _args(tmp_path, "--model", model, "--samples", "20", "--unknown-dates", "2000-1-1")
    assert experiment.run(args)["undated_documents"] == ["placeholder"]


def test_the_ranker_runs_on_the_threads_asked_for(tmp_path, monkeypatch):
    """The run had kept torch's default threads, which contend on a busy machine (an
    epoch took 51 s with two, 8 s with one): one by default, as every other experiment."""
    import torch

    seen = []
    monkeypatch.setattr(
        experiment, "_run", lambda args, model: seen.append(torch.get_num_threads())
    )
    before = torch.get_num_threads()
    torch.set_num_threads(2)  # a default the run must change, whatever the machine's
    try:
        experiment.run(_args(tmp_path))
        experiment.run(_args(tmp_path, "--threads", "0"))
        assert seen == [1, 2] and torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
    with pytest.raises(ValueError, match="--threads must be an integer >= 0, got -1"):
        experiment.run(_args(tmp_path, "--threads", "-1"))
