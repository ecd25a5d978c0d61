"""Country "attack" events per period with coreference posterior intervals (paper §6, Fig. 6).

Runs the paper's exploratory analysis on a CoNLL-U corpus with parses, mentions
(``Entity=`` MISC annotation) and a date per document (``# meta::dateCreated``):

1. the rules of :mod:`calib_metrics.paper.events.analysis` on every mention, once;
2. with **gold coreference** (one deterministic clustering: zero-width intervals);
3. with the **1-best** clustering of an antecedent ranker;
4. with **S sampled clusterings** from the ranker: posterior mean, normal and
   percentile intervals of ``n(t, c)``, and the exact Poisson-binomial given the
   per-document probabilities;
5. the documents whose event probability is near 0.5, with the competing
   coreference decisions.

Only documents with both an attack-agent mention and a country mention can hold an
event under any clustering; every other document has ``a(d, c) = 0`` exactly and is
never sampled. Without ``--model`` a ranker is trained on the GUM train documents
*except* those candidate documents, so every scored document is held out (the
candidate set is chosen from the lexicon and the parse, never from gold
coreference).
"""

from __future__ import annotations

import argparse
import datetime
import sys
import time
import warnings
from pathlib import Path

import torch
from tqdm.auto import tqdm

from calib_metrics.few_bins import ImmediateWarning
from calib_metrics.functional.errors import MOST_SAMPLES
from calib_metrics.functional.intervals import normal_quantile
from calib_metrics.models.coref_ranker import N_BITS_RANGE, AntecedentRanker
from calib_metrics.paper import options, report
from calib_metrics.paper.coref_conllu import read_coref_documents
from calib_metrics.paper.coref_features import features_for
from calib_metrics.paper.countries import CountryLexicon
from calib_metrics.paper.events.analysis import (
    DATE,
    UNKNOWN_DATES,
    EventExtractor,
    aggregate_events,
    document_period,
    gold_antecedents,
    has_unknown_date,
    period_span,
)
from calib_metrics.paper.events.errors import MIN_SUPPORT, pairs_in_band, uncertain_documents
from calib_metrics.paper.events.stats import sample_summary
from calib_metrics.paper.locations import data_help, find_dataset, missing_data
from calib_metrics.predictions import save_figure
from calib_metrics.wording import counted, level_text

DESCRIPTION = "country 'attack' events per period with coreference posterior intervals (§6)"
NAME = "ud-english-gum"
LEXICON = "phoenix-country-actors"


# The uncertain (document, country) pairs listed, closest to 0.5 first, and the
# coreference decisions shown for each (those that explain most of its variance).
UNCERTAIN_TOP = 10
UNCERTAIN_DECISIONS = 3

# The options --quick sets when not given: (full run, --quick).
QUICK = {"samples": (100, 20), "epochs": (3, 1)}
N_BITS = 20  # the ranker's feature hash bits, unless --n-bits (or --model's own)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--data", default=None, help=data_help("GUM's folder, or a folder or file of CoNLL-U")
    )
    options.add_out(parser, "events")
    parser.add_argument(
        "--lexicon",
        default=None,
        help=f"Phoenix actors folder (default: beside the corpus, else {LEXICON}/ where "
        "--data's default looks)",
    )
    parser.add_argument(
        "--any-case",
        action="store_true",
        help="match country names in any case (lower-cased text); by default only "
        "capitalised words are names, so 'male' is not Male (Maldives)",
    )
    parser.add_argument(
        "--period",
        choices=("month", "quarter", "year"),
        default="year",
        help="period the documents are counted by",
    )
    parser.add_argument(
        "--unknown-dates",
        nargs="*",
        default=None,  # UNKNOWN_DATES, and no warning when no document has it
        metavar="DATE",
        help="dateCreated values (YYYY-MM-DD, YYYY-MM or YYYY), compared as written, that "
        "stand for an unknown date; such documents are left out of every period (default: "
        f"{' '.join(UNKNOWN_DATES)}, which GUM gives its conversations and a court "
        "transcript); with no DATE every date counts",
    )
    parser.add_argument(
        "--samples",
        type=int,
        default=None,
        help=options.quick_help("coreference samples S", QUICK, "samples"),
    )
    parser.add_argument("--model", default=None, help="a saved AntecedentRanker (ranker.pt)")
    parser.add_argument(
        "--epochs",
        type=int,
        default=None,
        help=options.quick_help("ranker training epochs", QUICK, "epochs"),
    )
    parser.add_argument(
        "--n-bits", type=int, default=None, help=f"ranker feature hash bits (default: {N_BITS})"
    )
    parser.add_argument(
        "--enhanced",
        action="store_true",
        help="also use enhanced-UD subjects (nsubj:xsubj) for the attack rule",
    )
    parser.add_argument(
        "--confidence", type=float, default=0.95, help="level of the counts' intervals"
    )
    parser.add_argument(
        "--figure-interval",
        choices=tuple(FIGURE_INTERVALS),
        default="percentile",
        help="the band the figures shade: the percentile interval of the sampled counts "
        "(what the samples say, never below 0) or the paper's normal m ∓ z·s (drawn from 0) "
        "(default: percentile)",
    )
    parser.add_argument(
        "--band",
        type=float,
        nargs=2,
        default=(0.05, 0.95),
        metavar=("LO", "HI"),
        help="event probabilities listed as uncertain (closest to 0.5 first)",
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="seed of the ranker's training and the samples"
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch threads, 0 for torch's own number: the ranker's work is many small ops "
        "(default: 1)",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"fewer epochs and samples, for tests ({options.QUICK_WINS})",
    )


def _files(data: Path) -> list[Path]:
    if data.is_file():
        return [data]
    files = sorted(data.glob("*.conllu")) + sorted(data.glob("*.conllu.gz"))
    if not files:
        raise missing_data(data, NAME, ".conllu or .conllu.gz files")
    return files


def _read(files: list[Path]) -> tuple[list, list[str]]:
    docs, split = [], []
    for f in tqdm(files, desc="read", leave=False):
        part = read_coref_documents(f)
        name = f.name.split(".")[0]
        tag = (
            "train"
            if "train" in name
            else "dev"
            if "dev" in name
            else "test"
            if "test" in name
            else name
        )
        docs += part
        split += [tag] * len(part)
    return docs, split


def _train_ranker(docs, args, out: Path, model: AntecedentRanker | None = None):
    """``model`` (read from --model), or a ranker trained on ``docs``; with its summary."""
    if model is not None:
        return model, {"model": str(args.model)}
    if not docs:
        raise ValueError("no training documents for the ranker (pass --model PATH)")
    model = AntecedentRanker(n_bits=args.n_bits)
    g = torch.Generator().manual_seed(args.seed)
    t0 = time.perf_counter()
    feats = [features_for(model, d) for d in docs]
    history = model.fit(feats, epochs=args.epochs, generator=g, progress=True)
    model.save(out / "ranker.pt")
    info = {
        "model": str(out / "ranker.pt"),
        "train_documents": len(docs),
        "epochs": args.epochs,
        "objective": history,
        "train_seconds": time.perf_counter() - t0,
    }
    return model, info


def _cells(analysis, summary, dist, gold, best) -> list[dict]:
    """One row per (period, country) cell where any of the views is non-zero."""
    rows = []
    for t, period in enumerate(analysis.periods):
        for c, code in enumerate(analysis.codes):
            vals = [summary.mean[t, c], gold[t, c], best[t, c]]
            if all(float(v) == 0 for v in vals):
                continue
            rows.append(
                {
                    "period": period,
                    "country": code,
                    "gold": int(gold[t, c]),
                    "one_best": int(best[t, c]),
                    "mean": float(summary.mean[t, c]),
                    "std": float(summary.std[t, c]),
                    "normal": [
                        float(summary.normal_lower[t, c]),
                        float(summary.normal_upper[t, c]),
                    ],
                    # sample values of a count: whole numbers (sample_summary)
                    "percentile": [
                        int(summary.percentile_lower[t, c]),
                        int(summary.percentile_upper[t, c]),
                    ],
                    "exact_mean": float(dist.mean[t, c]),
                    "exact_var": float(dist.var[t, c]),
                    "exact_interval": [int(dist.lower[t, c]), int(dist.upper[t, c])],
                }
            )
    return rows


def _window(active: torch.Tensor, pad: int = 3) -> slice:
    """The periods from ``pad`` before the first to ``pad`` after the last active one."""
    idx = active.nonzero().flatten()
    if idx.numel() == 0:
        return slice(0, active.numel())
    return slice(max(0, int(idx[0]) - pad), int(idx[-1]) + pad + 1)


# The intervals the figures can shade (--figure-interval), as their legends name them:
# sample_summary's percentile interval, whose ends are sampled counts, or its normal
# interval m ∓ z·s, the paper's, drawn from 0. The normal one had been the only one: at a
# small count it reached 0.53 where the samples reached 1 (PRK on GUM: the gold count 1
# lay above the band, inside the percentile interval [0, 1]).
FIGURE_INTERVALS = {
    "percentile": "percentile, over posterior samples",
    "normal": "normal, over posterior samples",
}


def _figure_band(summary, interval: str) -> tuple[torch.Tensor, torch.Tensor]:
    """The ends of the band the figures shade, ``--figure-interval``'s."""
    if interval == "normal":
        return summary.normal_lower.clamp_min(0), summary.normal_upper
    return summary.percentile_lower, summary.percentile_upper


def _figures(
    analysis,
    summary,
    gold_counts,
    best_counts,
    top: list[int],
    out: Path,
    confidence: float,
    interval: str = "percentile",
) -> list[str]:
    """A time series per country in ``top`` and an overlay of the first two (Fig. 6).

    Each figure shows the periods around those with a non-zero value (GUM spans
    1895-2024 with a handful of documents a year); the table has all periods. The
    x axis is to scale in time: a year, quarter or month without documents has no
    period and is left as a gap, rather than the neighbours closing up over it.
    """
    from calib_metrics.plot import posterior_time_series

    spans = [period_span(p) for p in analysis.periods]
    lower, upper = _figure_band(summary, interval)
    # A mean above a band of [0, 0] (an event in fewer samples than the band leaves out)
    # is still a period to show.
    active = (summary.mean > 0) | (upper > 0) | (gold_counts > 0) | (best_counts > 0)  # [T, C]
    kind = {"confidence": confidence, "interval": FIGURE_INTERVALS[interval]}
    paths = []
    for c in top:
        code = analysis.codes[c]
        w = _window(active[:, c])
        fig, ax = posterior_time_series(
            analysis.periods[w],
            summary.mean[w, c],
            lower[w, c],
            upper[w, c],
            label=code,
            one_best=best_counts[w, c],
            gold=gold_counts[w, c],
            title=f"{code}: documents with an attack",
            spans=spans[w],
            **kind,
        )
        path = out / f"events_{code}.png"
        save_figure(fig, path, "--out", dpi=100, bbox_inches="tight")
        paths.append(path.name)  # relative to --out
    if len(top) >= 2:
        pair = top[:2]
        w = _window(active[:, pair].any(1))
        fig = ax = None
        for c, color in zip(pair, ("tab:blue", "tab:red"), strict=True):
            fig, ax = posterior_time_series(
                analysis.periods[w],
                summary.mean[w, c],
                lower[w, c],
                upper[w, c],
                ax=ax,
                label=analysis.codes[c],
                color=color,
                title=f"{analysis.codes[pair[0]]} vs {analysis.codes[pair[1]]}",
                spans=spans[w],
                **kind,
            )
        path = out / "events_overlay.png"
        save_figure(fig, path, "--out", dpi=100, bbox_inches="tight")
        paths.append(path.name)  # relative to --out
    import matplotlib.pyplot as plt

    plt.close("all")
    return paths


def _load(args: argparse.Namespace) -> dict:
    """The corpus, its split and periods, and the country lexicon."""
    data = (
        Path(args.data)
        if args.data and Path(args.data).is_file()
        else find_dataset(NAME, args.data)
    )
    beside = Path(data).parent / LEXICON  # a corpus inside the shared data folder
    lexicon_dir = (
        beside if args.lexicon is None and beside.is_dir() else find_dataset(LEXICON, args.lexicon)
    )
    lexicon = CountryLexicon.load(lexicon_dir, capitalized=not args.any_case)
    docs, split = _read(_files(Path(data)))
    if not docs:
        raise ValueError(f"no documents in {data}")
    unknown = set(UNKNOWN_DATES if args.unknown_dates is None else args.unknown_dates)
    if args.unknown_dates is not None:  # the default is GUM's, not the user's
        _warn_unmatched_dates(unknown, docs)
    is_undated = [has_unknown_date(d, unknown) for d in docs]
    # None: an unknown date (no period at all) or a year-only one (no month or quarter).
    periods = [document_period(d, args.period, unknown=unknown) for d in docs]
    undated = [d.doc_id for d, gone in zip(docs, is_undated, strict=True) if gone]
    left_out = [
        d.doc_id
        for d, p, gone in zip(docs, periods, is_undated, strict=True)
        if p is None and not gone
    ]
    if len(left_out) + len(undated) == len(docs):
        year_only = f"{len(left_out)} dated by year only (use --period year)" if left_out else ""
        raise ValueError(
            f"none of the {len(docs)} documents has a {args.period}: "
            + " and ".join(
                part
                for part in (year_only, f"{len(undated)} with an unknown date (--unknown-dates)")
                if part and not part.startswith("0 ")
            )
        )
    if undated:
        print(
            f"{_of(len(undated), len(docs))} dated {' or '.join(sorted(unknown))}, an unknown "
            "date, and left out of every period (--unknown-dates with no date counts them)",
            file=sys.stderr,
        )
    if left_out:
        print(
            f"{_of(len(left_out), len(docs))} dated by year only and left out of the "
            f"{args.period} periods (--period year counts them)",
            file=sys.stderr,
        )
    return {
        "data": data,
        "lexicon_dir": lexicon_dir,
        "lexicon": lexicon,
        "docs": docs,
        "split": split,
        "periods": periods,
        "left_out": left_out,
        "undated": undated,
        "unknown_dates": sorted(unknown),
    }


def _unknown_dates(values: list[str]) -> list[str]:
    """``--unknown-dates``, each a date as a document's metadata may write it (YYYY-MM-DD,
    YYYY-MM or YYYY; months and days of one or two digits), sorted. A mistyped one
    (``1/1/2000``) had been taken silently: compared as written, it matched no document,
    and GUM's placeholder-dated documents made a year 2000 again.

    Example:
        >>> _unknown_dates([" 2000-01-01", "1999", "2000-1-1"])
        ['1999', '2000-01-01', '2000-1-1']
        >>> _unknown_dates(["1/1/2000"])  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: --unknown-dates: '1/1/2000' is not a date written YYYY-MM-DD (or ...
    """
    dates = sorted({value.strip() for value in values if value.strip()})
    for date in dates:
        if not _is_written_date(date):
            raise ValueError(
                f"--unknown-dates: {date!r} is not a date written YYYY-MM-DD (or YYYY-MM, "
                "YYYY), such as 2000-01-01"
            )
    return dates


def _is_written_date(text: str) -> bool:
    """Whether ``text`` is a date the corpus reader takes (``analysis.DATE``, one or two
    digits of month and day: a corpus writing 2000-1-1 can name it) and a calendar day."""
    written = DATE.fullmatch(text)
    if written is None:
        return False
    year, month, day = (int(part) if part else 1 for part in written.groups())
    try:
        datetime.date(year, month, day)
    except ValueError:  # 2000-13-01, 2001-02-29
        return False
    return True


def _warn_unmatched_dates(unknown: set[str], docs: list) -> None:
    """Say at once which of the dates given no document has: a date the corpus writes
    otherwise leaves out nothing, and the counts hold what it was meant to remove."""
    unmatched = [d for d in sorted(unknown) if not any(has_unknown_date(x, (d,)) for x in docs)]
    if unmatched:
        them = "that date" if len(unmatched) == 1 else "each of those dates"
        warnings.warn(
            f"--unknown-dates: no document is dated {' or '.join(unmatched)} (dates are "
            f"compared as written in # meta::dateCreated), so {them} leaves none out",
            ImmediateWarning,
            stacklevel=2,
        )


def _sample_clusterings(model, docs, candidates: list[int], args) -> dict:
    """1-best and sampled entity roots, antecedents and choice probabilities per candidate."""
    from calib_metrics.models.coref import (
        antecedent_log_probs,
        entity_roots,
        most_probable_antecedents,
        sample_antecedents,
    )

    g = torch.Generator().manual_seed(args.seed)
    best_roots, sample_roots = [None] * len(docs), [None] * len(docs)
    antecedents, choice_probs = {}, {}
    with torch.no_grad():
        for i in tqdm(candidates, desc="sample", leave=False):
            scores = model.score_document(features_for(model, docs[i]))[None].float()
            best_roots[i] = entity_roots(most_probable_antecedents(scores))[0]
            a = sample_antecedents(scores, args.samples, generator=g)[:, 0]  # [S, N]
            antecedents[i] = a
            sample_roots[i] = entity_roots(a)
            choice_probs[i] = antecedent_log_probs(scores)[0].exp()
    return {
        "best_roots": [r if r is None else r[None] for r in best_roots],
        "sample_roots": sample_roots,
        "antecedents": antecedents,
        "choice_probs": choice_probs,
    }


def _country_rows(sampled, dist, gold_counts, best_counts, confidence: float) -> list[dict]:
    """Totals over all periods per country, most events first."""
    totals = sample_summary(sampled.totals(), confidence)  # [C]
    exact_totals = dist.mean.sum(0)
    rows = []
    for c, code in enumerate(sampled.codes):
        row = {
            "country": code,
            "gold": int(gold_counts[:, c].sum()),
            "one_best": int(best_counts[:, c].sum()),
            "mean": float(totals.mean[c]),
            "std": float(totals.std[c]),
            "normal": [float(totals.normal_lower[c]), float(totals.normal_upper[c])],
            "percentile": [int(totals.percentile_lower[c]), int(totals.percentile_upper[c])],
            "exact_mean": float(exact_totals[c]),
        }
        if row["gold"] or row["one_best"] or row["mean"] > 0:
            rows.append(row)
    rows.sort(key=lambda r: (-r["mean"], -r["gold"], r["country"]))
    return rows


def _document_rows(sampled, gold, best, docs, periods) -> list[dict]:
    """Per document and country: the model's a(d, c) next to gold and 1-best."""
    fired = {}
    for name, analysis in (("sampled", sampled), ("gold", gold), ("one_best", best)):
        probs = analysis.doc_probs
        for p in range(analysis.pair_doc.numel()):
            key = (int(analysis.pair_doc[p]), analysis.codes[int(analysis.pair_code[p])])
            fired.setdefault(key, {"prob": 0.0, "gold": 0, "one_best": 0})
            fired[key]["prob" if name == "sampled" else name] = (
                float(probs[p]) if name == "sampled" else 1
            )
    return [
        {"doc": docs[d].doc_id, "period": periods[d], "country": code, **row}
        for (d, code), row in sorted(fired.items())
    ]


def _rules(lexicon, docs, enhanced: bool) -> tuple[list, list[int], int]:
    """Every document's mention table, the candidates (rules can fire), attack mentions."""
    extractor = EventExtractor(lexicon, enhanced=enhanced)
    tables = [extractor.table(d) for d in tqdm(docs, desc="rules", leave=False)]
    candidates = [i for i, t in enumerate(tables) if t.can_fire]
    attack_mentions = sum(int(t.attacks.sum()) for t in tables)
    print(
        f"{counted(len(docs), 'document')}, {counted(attack_mentions, 'attack-agent mention')}, "
        f"{counted(len(candidates), 'candidate document')}"
    )
    return tables, candidates, attack_mentions


def lexicon_matches(lexicon, docs) -> list[dict]:
    """Every distinct text the lexicon matched in the documents' sentences, with its code
    and count, most frequent first: the audit trail of the country mentions (``matches.tsv``).

    Example:
        >>> from types import SimpleNamespace as NS
        >>> from calib_metrics.paper.countries import CountryLexicon
        >>> lex = CountryLexicon({("france",): "FRA"}, other_names={("new", "france")})
        >>> words = ["France", "and", "New", "France", "and", "France"]
        >>> doc = NS(sentences=[[{"form": w} for w in words]])
        >>> lexicon_matches(lex, [doc])
        [{'text': 'France', 'code': 'FRA', 'count': 2}]
    """
    counts: dict[tuple[str, str], int] = {}
    for doc in docs:
        for sent in doc.sentences:
            forms = [str(t.get("form") or "") for t in sent]
            for start, end, code in lexicon.match_tokens(forms):
                key = (" ".join(forms[start:end]), code)
                counts[key] = counts.get(key, 0) + 1
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return [{"text": text, "code": code, "count": n} for (text, code), n in ranked]


def _write_matches(path: Path, matches: list[dict]) -> None:
    rows = [f"{m['count']}\t{m['code']}\t{m['text']}" for m in matches]
    path.write_text("\n".join(["count\tcode\ttext", *rows]) + "\n")


def _gold(docs, tables, periods):
    """Events of the gold clusterings: one deterministic clustering per document."""
    from calib_metrics.models.coref import entity_roots

    gold_roots = [
        entity_roots(gold_antecedents(d))[None] if t.can_fire else None
        for d, t in zip(docs, tables, strict=True)
    ]
    return aggregate_events(tables, gold_roots, periods, deterministic=True)


def _check(args: argparse.Namespace) -> AntecedentRanker | None:
    """Settle and check the options before any data are read; the --model ranker, read
    now, so that a file that is not one is said at once (it had been after 20 s)."""
    training = (("--epochs", args.epochs), ("--n-bits", args.n_bits))
    given = [option for option, value in training if value is not None]
    if args.model is not None and given:
        # They had been dropped silently: a run "with 10 bits" was the saved ranker's.
        raise ValueError(
            f"{' and '.join(given)} train a ranker, and --model uses a saved one: "
            "drop one or the other"
        )
    options.settle(args, QUICK)
    args.n_bits = N_BITS if args.n_bits is None else args.n_bits
    # One sample has no spread: its "95% interval" was [x, x] (every other experiment
    # refuses fewer than 2 draws too).
    options.check_integers(args, samples=2, epochs=0, threads=0)
    # The sampler's own bound, said here rather than after the corpus is read.
    options.check_in_range(args, "samples", 2, MOST_SAMPLES - 1)
    options.check_in_range(args, "n_bits", *N_BITS_RANGE)
    if args.unknown_dates is not None:
        args.unknown_dates = _unknown_dates(args.unknown_dates)
    # The summaries check these too, but only after the ranker is trained.
    if not 0 < args.confidence < 1:
        raise ValueError(f"--confidence must lie in (0, 1), got {args.confidence}")
    lo, hi = args.band
    if not 0 <= lo <= hi <= 1:
        raise ValueError(f"--band LO HI must satisfy 0 <= LO <= HI <= 1, got {lo} {hi}")
    options.check_file(args.model, "--model")
    return None if args.model is None else AntecedentRanker.load(args.model)


def run(args: argparse.Namespace) -> dict:
    given_model = _check(args)
    # The ranker's training is many small ops: torch's default threads only contend (on
    # a busy 2-core machine an epoch took 51 s with two threads, 8 s with one).
    with report.torch_threads(args.threads):
        return _run(args, given_model)


def _run(args: argparse.Namespace, given_model: AntecedentRanker | None) -> dict:
    out = report.output_folder(args.out)
    corpus = _load(args)
    out.mkdir(parents=True, exist_ok=True)
    docs, periods = corpus["docs"], corpus["periods"]

    tables, candidates, attack_mentions = _rules(corpus["lexicon"], docs, args.enhanced)
    matches = lexicon_matches(corpus["lexicon"], docs)
    _write_matches(out / "matches.tsv", matches)
    gold = _gold(docs, tables, periods)

    held_out = set(candidates)
    split = corpus["split"]
    train_docs = [d for i, d in enumerate(docs) if split[i] == "train" and i not in held_out]
    model, model_info = _train_ranker(train_docs, args, out, given_model)
    drawn = _sample_clusterings(model, docs, candidates, args)
    best = aggregate_events(tables, drawn["best_roots"], periods, deterministic=True)
    sampled = aggregate_events(
        tables, drawn["sample_roots"], periods, n_samples=args.samples, deterministic=False
    )
    # All three share one layout: periods from the documents, codes from the tables.
    summary = sampled.summary(args.confidence)
    dist = sampled.poisson_binomial(args.confidence)
    gold_counts, best_counts = gold.counts()[0], best.counts()[0]  # [T, C]
    country_rows = _country_rows(sampled, dist, gold_counts, best_counts, args.confidence)
    doc_rows = _document_rows(sampled, gold, best, docs, periods)
    brier = (
        sum((r["prob"] - r["gold"]) ** 2 for r in doc_rows) / len(doc_rows) if doc_rows else None
    )
    band = tuple(args.band)
    uncertain = uncertain_documents(
        sampled,
        docs,
        tables,
        drawn["antecedents"],
        drawn["choice_probs"],
        band=band,
        top=UNCERTAIN_TOP,
        decisions=UNCERTAIN_DECISIONS,
    )
    top = [sampled.codes.index(r["country"]) for r in country_rows if r["mean"] > 0][:4]
    figures = []
    if top:
        figures = _figures(
            sampled,
            summary,
            gold_counts,
            best_counts,
            top,
            out,
            args.confidence,
            args.figure_interval,
        )

    results = {
        "experiment": "events",
        "data": str(corpus["data"]),
        "lexicon": str(corpus["lexicon_dir"]),
        "lexicon_entries": len(corpus["lexicon"]),
        "lexicon_matches": sum(m["count"] for m in matches),
        "distinct_matches": len(matches),
        "period": args.period,
        "samples": args.samples,
        "confidence": args.confidence,
        "figure_interval": args.figure_interval,
        "enhanced": args.enhanced,
        "documents": len(docs),
        "left_out_documents": corpus["left_out"],
        "unknown_dates": corpus["unknown_dates"],
        "undated_documents": corpus["undated"],
        "periods": len(sampled.periods),
        "attack_mentions": attack_mentions,
        "candidate_documents": [docs[i].doc_id for i in candidates],
        "ranker": model_info,
        "countries": country_rows,
        "cells": _cells(sampled, summary, dist, gold_counts, best_counts),
        "document_events": doc_rows,
        "document_brier": brier,
        "band": list(args.band),
        # The list is cut at UNCERTAIN_TOP: how many pairs the band holds in all.
        "uncertain_in_band": int(pairs_in_band(sampled, band).numel()),
        "min_support": MIN_SUPPORT,
        "uncertain": uncertain,
        "figures": figures,
        "exactness": "gold and 1-best a(d,c) are exact (deterministic clusterings); the "
        "model's a(d,c) is the fraction of S samples (an estimate); the Poisson-binomial "
        "distribution of n(t,c) is exact given those a(d,c).",
    }
    report.write_json(out / "results.json", results)
    (out / "results.md").write_text(_markdown(results))
    _print_summary(results)
    return results


def _interval(lo_hi: list[float]) -> str:
    return f"[{lo_hi[0]:.2f}, {lo_hi[1]:.2f}]"


def _count_interval(lo_hi: list[int]) -> str:
    return f"[{lo_hi[0]}, {lo_hi[1]}]"


def _normal_header(confidence: float) -> str:
    """The normal interval's column, with the z of ``confidence`` (it had always said
    1.96, at ``--confidence 0.8`` too, beside ends 1.28 s from the mean).

    Example:
        >>> _normal_header(0.95), _normal_header(0.8)
        ('normal m±1.96s', 'normal m±1.28s')
    """
    return f"normal m±{_z_text(confidence)}s"


def _z_text(confidence: float) -> str:
    """The normal interval's z at ``confidence``, as results.md writes it: ``1.96``."""
    return f"{normal_quantile(confidence):.2f}"


def _country_table(r: dict) -> str:
    normal = _normal_header(r["confidence"])
    return report.markdown_table(
        ["country", "gold", "1-best", "mean", "std", normal, "percentile", "exact mean"],
        [
            [
                c["country"],
                c["gold"],
                c["one_best"],
                c["mean"],
                c["std"],
                _interval(c["normal"]),
                _count_interval(c["percentile"]),
                c["exact_mean"],
            ]
            for c in r["countries"]
        ],
    )


def _cell_table(r: dict) -> str:
    normal = _normal_header(r["confidence"])
    headers = ["period", "country", "gold", "1-best", "mean", normal, "percentile"]
    headers += ["Poisson-binomial mean", "exact interval"]
    return report.markdown_table(
        headers,
        [
            [
                c["period"],
                c["country"],
                c["gold"],
                c["one_best"],
                c["mean"],
                _interval(c["normal"]),
                _count_interval(c["percentile"]),
                c["exact_mean"],
                _count_interval(c["exact_interval"]),
            ]
            for c in r["cells"]
        ],
    )


def _listed_of(r: dict) -> str:
    """How many of the band's (document, country) pairs the list holds: the list is cut at
    UNCERTAIN_TOP, which had not been said (11 in the band, 10 listed, one dropped).

    Example:
        >>> _listed_of({"uncertain": [1] * 10, "uncertain_in_band": 11})
        'the 10 most uncertain of the 11 (document, country) pairs in the band'
        >>> _listed_of({"uncertain": [1], "uncertain_in_band": 1})
        'the 1 (document, country) pair in the band'
    """
    listed, in_band = len(r["uncertain"]), r["uncertain_in_band"]
    pairs = f"{counted(in_band, '(document, country) pair')} in the band"
    return f"the {listed} most uncertain of the {pairs}" if listed < in_band else f"the {pairs}"


def _rate(choice, min_support: int) -> str:
    """A choice's event rate with its sample count; "—" for a count below ``min_support``,
    which gives no usable rate (it had been printed like any other: 0.33 from 3 samples).

    Example:
        >>> from types import SimpleNamespace as NS
        >>> _rate(NS(event_rate=0.36, support=14), 5), _rate(NS(event_rate=1 / 3, support=3), 5)
        ('P(event|choice)=0.36 (n=14)', 'P(event|choice)=— (n=3 < 5)')
    """
    if choice.support < min_support:
        return f"P(event|choice)=— (n={choice.support} < {min_support})"
    return f"P(event|choice)={choice.event_rate:.2f} (n={choice.support})"


def _uncertain_section(r: dict) -> list[str]:
    if not r["uncertain"]:
        lo, hi = r["band"]
        return [f"None: no candidate document's event probability lies in [{lo}, {hi}]."]
    lines = [
        f"Listed: {_listed_of(r)}, each with at most {UNCERTAIN_DECISIONS} coreference "
        "decisions, those that explain most of its variance. P is the probability of the "
        "antecedent choice, P(event|choice) the event rate among the n samples that made it; "
        f"a choice made in fewer than {r['min_support']} samples has no usable rate (—) and "
        "does not rank the decision.",
        "",
    ]
    for u in r["uncertain"]:
        lines += [f"### {u.doc_id} — {u.code}, P(event) = {u.prob:.2f}", ""]
        lines += [f"> {text}" for text in u.sentences] + [""]
        for dec in u.decisions:
            opts = "; ".join(
                f"{_where(ch)}: P={ch.prob:.2f}, {_rate(ch, r['min_support'])}"
                for ch in dec.choices
            )
            lines.append(f"- mention {dec.text!r} (sentence {dec.sentence + 1}): {opts}")
        lines.append("")
    return lines


def _settings_line(r: dict) -> str:
    """The attack rule and the ranker behind the numbers: two runs that differ in them had
    written headers alike (PRK 0.077 basic, 0.063 with ``--enhanced``, one ranker).

    Example:
        >>> _settings_line({"enhanced": False, "ranker": {"model": "r.pt"}}).split(". Ranker: ")
        ['Attack rule: basic UD subjects (`--enhanced` adds nsubj:xsubj)', 'loaded from `r.pt`.']
    """
    rule = (
        "basic and enhanced UD subjects (nsubj:xsubj, `--enhanced`)"
        if r["enhanced"]
        else "basic UD subjects (`--enhanced` adds nsubj:xsubj)"
    )
    ranker = r["ranker"]
    if "epochs" in ranker:
        source = (
            f"trained here, {counted(ranker['epochs'], 'epoch')} on "
            f"{counted(ranker['train_documents'], 'document')} (saved to `{ranker['model']}`)"
        )
    else:
        source = f"loaded from `{ranker['model']}`"
    return f"Attack rule: {rule}. Ranker: {source}."


def _tables(r: dict) -> list[str]:
    """The counts per country, per period and country, and per document, and the
    uncertain documents; with no candidate document, why there are none."""
    if not r["candidate_documents"]:
        # Its empty tables had been followed by "no candidate document's event probability
        # lies in [0.05, 0.95]", as if there were some.
        return [
            "No candidate documents: no document has both an attack-agent mention and a "
            "country mention, so no clustering gives an event and every count is 0.",
        ]
    documents = report.markdown_table(
        ["document", "period", "country", "P(event)", "gold", "1-best"],
        [
            [d["doc"], d["period"], d["country"], d["prob"], d["gold"], d["one_best"]]
            for d in r["document_events"]
        ],
    )
    return [
        "## Per country (all periods)",
        "",
        _country_table(r),
        "",
        f"## Per {r['period']} and country",
        "",
        _cell_table(r),
        "",
        "## Per document: model probability a(d, c) vs gold and 1-best",
        "",
        documents,
        "",
        f"## Uncertain documents ({r['band'][0]} <= a(d, c) <= {r['band'][1]}, "
        "closest to 0.5 first)",
        "",
        *_uncertain_section(r),
    ]


def _markdown(r: dict) -> str:
    matches = counted(r["lexicon_matches"], "word or phrase", "words or phrases")
    lines = [
        "# Country attack events with coreference uncertainty (paper §6)",
        "",
        f"Data: `{r['data']}` — {counted(r['documents'], 'document')}, "
        f"{counted(r['periods'], r['period'] + ' period')}, "
        f"{counted(r['attack_mentions'], 'attack-agent mention')}, "
        f"{counted(len(r['candidate_documents']), 'candidate document')} (an attack agent "
        f"and a country mention), S = {r['samples']} samples, "
        f"{level_text(r['confidence'])} intervals. The lexicon matched {matches} "
        f"({r['distinct_matches']} distinct; each with its code and count in `matches.tsv`).",
        "",
        _settings_line(r),
        "",
        *_left_out_note(r),
        *_tables(r),
    ]
    lines += ["", r["exactness"], ""]
    if r["figures"]:
        lines += [_figure_note(r), ""]
    lines += [f"![{Path(f).stem}]({Path(f).name})" for f in r["figures"]]
    return "\n".join(lines) + "\n"


def _figure_note(r: dict) -> str:
    """What the figures' band is (results.md).

    Example:
        >>> _figure_note({"confidence": 0.95, "figure_interval": "percentile"})[:69]
        'The figures shade the 95% percentile interval of the sampled counts ('
    """
    level = level_text(r["confidence"])
    if r["figure_interval"] == "normal":
        z = _z_text(r["confidence"])
        return (
            f"The figures shade the paper's {level} normal interval m ± {z} s, drawn from 0 "
            "(`--figure-interval percentile`: the sampled counts' percentile interval)."
        )
    tail = level_text((1 - r["confidence"]) / 2)
    return (
        f"The figures shade the {level} percentile interval of the sampled counts (the "
        "tables' percentile column; `--figure-interval normal`: the paper's m ± z s). A "
        f"mean above a band of [0, 0] is an event in at most {tail} of the samples."
    )


def _of(part: int, whole: int) -> str:
    """ "1 of 237 documents is", "2 of 237 documents are"."""
    return f"{part} of {counted(whole, 'document')} {'is' if part == 1 else 'are'}"


def _left_out_note(r: dict) -> list[str]:
    """What results.md says of the documents that no period holds."""
    lines = []
    if r["undated_documents"]:
        dates = " or ".join(r["unknown_dates"])
        lines += [
            f"{_of(len(r['undated_documents']), r['documents'])} dated {dates}, which stands "
            "for an unknown date: they are in no period, so the tables below leave them out "
            "(the counts of mentions, candidates and lexicon matches above include them; "
            "`--unknown-dates` with no date puts them in their periods): "
            f"{', '.join(r['undated_documents'])}.{_candidates_among(r, r['undated_documents'])}",
            "",
        ]
    if r["left_out_documents"]:
        lines += [
            f"{_of(len(r['left_out_documents']), r['documents'])} dated by year only: they have "
            f"no {r['period']} and are left out of every count here (`--period year` counts "
            f"them): {', '.join(r['left_out_documents'])}."
            f"{_candidates_among(r, r['left_out_documents'])}",
            "",
        ]
    return lines


def _candidates_among(r: dict, left_out: list[str]) -> str:
    candidates = [d for d in left_out if d in set(r["candidate_documents"])]
    if not candidates:
        return " None of them is a candidate document."
    return f" {len(candidates)} of them could hold an event (candidates): {', '.join(candidates)}."


def _where(choice) -> str:
    if choice.sentence is None:
        return "NEW"
    return f"{choice.text!r} (s{choice.sentence + 1})"


def _print_summary(r: dict) -> None:
    print(
        f"events: {counted(r['documents'], 'document')}, "
        f"{counted(r['attack_mentions'], 'attack-agent mention')}, "
        f"{counted(len(r['candidate_documents']), 'candidate')}, S={r['samples']}"
    )
    if not r["candidate_documents"]:
        print("  no candidate documents: no clustering gives an event")
        return
    for c in r["countries"][:8]:
        print(
            f"  {c['country']}: gold {c['gold']}, 1-best {c['one_best']}, "
            f"mean {c['mean']:.2f} normal {_interval(c['normal'])} "
            f"percentile {_count_interval(c['percentile'])}"
        )
    lo, hi = r["band"]
    listed, in_band = len(r["uncertain"]), r["uncertain_in_band"]
    shown = "all" if listed == in_band else f"the {listed} closest to 0.5"
    print(
        f"  uncertain: {counted(in_band, '(document, country) pair')} with "
        f"{lo} <= a(d, c) <= {hi}" + (f" ({shown} in results.md)" if in_band else "")
    )
