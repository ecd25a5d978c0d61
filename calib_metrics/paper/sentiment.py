"""The paper's §4.1: Bernoulli Naive Bayes versus logistic regression on tweets.

``calib-metrics reproduce sentiment`` labels NLTK's ``twitter_samples`` tweets by
the emoticon trick (positive iff the text holds ``:)``), deletes the emoticons,
extracts binary unigram features with a tweet tokenizer, splits train/dev/test
(stratified, seeded), picks Naive Bayes' smoothing ``alpha`` and logistic
regression's L2 strength ``C`` by F1 on dev, and reports F1, accuracy, CalibErr
with its 95% interval, the Brier split and the reliability diagrams (Figure 2)
on test. Without the tweets it falls back to Pang & Lee's sentence polarity set
and says so. scikit-learn is a dependency of calib-metrics (isotonic recalibration needs it).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import torch
from tqdm import tqdm

from calib_metrics.few_bins import warn_if_few_adaptive_bins
from calib_metrics.functional import brier_decomposition, calibration_error, calibration_error_ci
from calib_metrics.functional.calibration import MAX_BIN_SIZE
from calib_metrics.paper import options, paired, report
from calib_metrics.paper.locations import data_help
from calib_metrics.paper.tweets import (
    POLARITY,
    SMILEY,
    TWITTER,
    SentimentCorpus,
    balanced_subsample,
    check_fractions,
    label_counts,
    load_corpus,
    make_tokenizer,
    remove_emoticons,
    stratified_split,
)
from calib_metrics.predictions import save_figure

DESCRIPTION = "§4.1: Bernoulli Naive Bayes vs logistic regression on emoticon-labelled tweets"

NB_ALPHAS = (0.01, 0.03, 0.1, 0.3, 1.0, 3.0)
LR_CS = (0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0)
PAPER = {
    "naive_bayes": {"f1": 0.738, "calib_err": 0.105},
    "logistic_regression": {"f1": 0.729, "calib_err": 0.041},
}
MODELS = {"naive_bayes": "Naive Bayes", "logistic_regression": "Logistic regression"}


def _require_sklearn() -> Any:
    try:
        import sklearn
    except ImportError as err:
        raise ImportError(
            "the sentiment experiment needs scikit-learn, a dependency of calib-metrics: "
            "pip install scikit-learn"
        ) from err
    return sklearn


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``calib-metrics reproduce sentiment``.

    Example:
        >>> p = argparse.ArgumentParser()
        >>> add_arguments(p)
        >>> p.parse_args([]).split
        [0.6, 0.2, 0.2]
    """
    parser.add_argument("--data", default=None, help=data_help())
    options.add_out(parser, "sentiment")
    parser.add_argument(
        "--dataset",
        choices=("auto", TWITTER, POLARITY),
        default="auto",
        help=f"'auto' reads {TWITTER} and falls back to {POLARITY}",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of balancing, split, sampling")
    parser.add_argument(
        "--split", type=float, nargs=3, default=[0.6, 0.2, 0.2], help="train/dev/test fractions"
    )
    parser.add_argument(
        "--bin-size", type=int, default=None, help="adaptive bin size (default: test size // 10)"
    )
    parser.add_argument("--n-samples", type=int, default=10000, help="samples of Algorithm 2")
    parser.add_argument(
        "--emoticons",
        choices=("all", "smiley"),
        default="all",
        help="delete all emoticons or only the ':)' the label keys on",
    )
    parser.add_argument(
        "--tokenizer",
        choices=("auto", "nltk", "regex"),
        default="auto",
        help="nltk's TweetTokenizer, a twokenize-style regex, or nltk when installed",
    )
    parser.add_argument(
        "--no-balance",
        dest="balance",
        action="store_false",
        help="keep the label imbalance (default: subsample to equal classes, as the paper)",
    )
    parser.add_argument(
        "--alphas", type=float, nargs="+", default=list(NB_ALPHAS), help="NB smoothing grid"
    )
    parser.add_argument(
        "--cs", type=float, nargs="+", default=list(LR_CS), help="LR inverse L2 strength grid"
    )
    parser.add_argument(
        "--recalibrate",
        action="store_true",
        help="also fit Platt and isotonic recalibrators on dev; test before/after, paired",
    )


def _binary_f1(y_true: torch.Tensor, y_pred: torch.Tensor) -> float:
    tp = int(((y_pred == 1) & (y_true == 1)).sum())
    wrong = int((y_pred != y_true).sum())
    return 2 * tp / (2 * tp + wrong) if tp + wrong else 0.0


def fit_one_thread(model: Any, x: Any, y: Any) -> Any:
    """``model.fit(x, y)`` with BLAS on one thread, so that the results do not depend on
    the machine's thread count.

    liblinear's solver takes its dot products and norms from BLAS, which splits a long one
    across threads and so rounds it differently; its stopping rule turns those last bits
    into other weights (test probabilities apart by up to 4e-5 between OPENBLAS_NUM_THREADS
    1 and 2), which isotonic recalibration magnified to 0.0003 in a table of the docs.
    Predicting and Naive Bayes are sparse products, which no BLAS thread count changes.

    Example:
        >>> from sklearn.naive_bayes import BernoulliNB
        >>> fit_one_thread(BernoulliNB(), [[1, 0], [0, 1]], [1, 0]).predict([[1, 0]]).tolist()
        [1]
    """
    from threadpoolctl import threadpool_limits  # scikit-learn's own dependency

    with threadpool_limits(limits=1, user_api="blas"):
        return model.fit(x, y)


def select(make_model: Any, grid: list[float], train: tuple, dev: tuple, desc: str) -> tuple:
    """Fit one model per grid value; keep the one with the best dev F1 (first on ties).

    Dev CalibErr (adaptive bins of dev size // 10) is recorded beside each F1, to
    show what selecting by F1 alone does to calibration; it plays no part in the
    choice. Returns ``(best_value, fitted_model, {value: {"f1", "calib_err"}})``.

    Example:
        >>> from sklearn.naive_bayes import BernoulliNB
        >>> X = [[1, 0], [0, 1], [1, 0], [0, 1]]
        >>> best, model, scores = select(lambda a: BernoulliNB(alpha=a), [0.1, 1.0],
        ...                              (X, [1, 0, 1, 0]), (X, [1, 0, 1, 0]), "nb")
        >>> best, scores[0.1]["f1"], scores[1.0]["f1"]
        (0.1, 1.0, 1.0)
    """
    if not grid:
        raise ValueError(f"{desc}: the hyperparameter grid is empty")
    target = torch.as_tensor(dev[1])
    bin_size = max(1, target.numel() // 10)
    scores: dict[float, dict[str, float]] = {}
    best = None
    for value in tqdm(grid, desc=desc, file=sys.stderr, leave=False):
        model = fit_one_thread(make_model(value), *train)
        probs = torch.from_numpy(model.predict_proba(dev[0])[:, 1]).to(torch.float64)
        scores[value] = {
            "f1": _binary_f1(target, (probs > 0.5).long()),
            "calib_err": float(calibration_error(probs, target, bin_size=bin_size, debias=False)),
        }
        if best is None or scores[value]["f1"] > scores[best[0]]["f1"]:
            best = (value, model)
    return best[0], best[1], scores


def evaluate(
    probs: torch.Tensor,
    target: torch.Tensor,
    bin_size: int,
    n_samples: int = 10000,
    generator: torch.Generator | None = None,
) -> tuple[dict[str, Any], Any]:
    """Test metrics of positive-class probabilities: F1, accuracy, CalibErr, Brier.

    Returns the metrics and the :class:`CalibrationResult` (for the diagram).

    Example:
        >>> q = torch.tensor([0.1, 0.4, 0.6, 0.9], dtype=torch.float64)
        >>> m, _ = evaluate(q, torch.tensor([0, 1, 1, 1]), bin_size=2, n_samples=10)
        >>> m["accuracy"], round(m["f1"], 3), m["n_bins"]
        (0.75, 0.8, 2)
    """
    pred = (probs > 0.5).long()
    result = calibration_error_ci(
        probs,
        target,
        bin_size=bin_size,
        n_samples=n_samples,
        generator=generator,
        debias=False,
        interval="paper",
    )
    brier = brier_decomposition(probs, target, bin_size=bin_size)
    metrics = {
        "f1": _binary_f1(target, pred),
        "accuracy": float((pred == target).double().mean()),
        "calib_err": float(result.error),
        "calib_err_mean": float(result.mean),
        "calib_err_std": float(result.std),
        "calib_err_lower": float(result.lower),
        "calib_err_upper": float(result.upper),
        "calib_err_debiased": float(
            calibration_error(probs, target, bin_size=bin_size, debias=True)
        ),
        "brier": float(brier.brier),
        "brier_calibration": float(brier.calibration),
        "brier_refinement": float(brier.refinement),
        "brier_within_bin": float(brier.within_bin),
        "n_bins": int(result.bins.count.numel()),
        "mean_prob": float(probs.mean()),
        # The reliability diagram's two end bins (docs/sentiment.md reads them).
        "lowest_bin": _bin(result.bins, 0),
        "highest_bin": _bin(result.bins, -1),
    }
    return metrics, result


def _ends(metrics: dict[str, Any]) -> str:
    """``0.002 (13.5% positive) to 0.999 (89.9%)``: a model's end bins as text."""
    low, high = metrics["lowest_bin"], metrics["highest_bin"]
    return (
        f"{low['mean_prob']:.3f} ({100 * low['frequency']:.1f}% positive) to "
        f"{high['mean_prob']:.3f} ({100 * high['frequency']:.1f}%)"
    )


def _bin(bins, i: int) -> dict[str, float]:
    """Bin ``i``'s mean prediction and frequency of positives."""
    return {"mean_prob": float(bins.pred_mean[i]), "frequency": float(bins.freq[i])}


def _feature_texts(corpus: SentimentCorpus, emoticons: str) -> list[str]:
    texts = corpus.texts
    if corpus.emoticon_labelled:
        texts = [remove_emoticons(t, emoticons) for t in texts]
        # The label must not be readable off the features.
        if any(SMILEY in t for t in texts):
            raise RuntimeError("emoticon removal left a ':)' in the text")
    return texts


def _figures(results: dict, curves: dict, out: Path) -> dict[str, str]:
    from matplotlib.figure import Figure

    from calib_metrics.plot import reliability_diagram, shared_x_axis

    paths = {}
    both = Figure(figsize=(5 * len(curves), 5.6), layout="constrained")
    shared = shared_x_axis(list(curves.values()))  # the models side by side on one x axis
    panels = zip(both.subplots(1, len(curves)), curves.items(), strict=True)
    for index, (ax, (key, result)) in enumerate(panels):
        m = results["models"][key]
        title = f"{MODELS[key]} ({m['hyperparameter']}={m['value']:g}), F1 {100 * m['f1']:.1f}%"
        kind = {"interval": "paper", "debias": False}  # as evaluate() draws
        reliability_diagram(
            result, ax=ax, title=shared.title(title, index), **kind,
            xscale=shared.xscale, logit_range=shared.logit_range,
        )  # fmt: skip
        single, _ = reliability_diagram(result, title=title, **kind)
        paths[key] = f"sentiment_{key}.png"  # relative to --out
        save_figure(single, out / paths[key], "--out", dpi=100, bbox_inches="tight")
    paths["both"] = "sentiment_reliability.png"
    save_figure(both, out / paths["both"], "--out", dpi=100, bbox_inches="tight")
    return paths


def _markdown(results: dict) -> str:
    rows = []
    nb_minus_lr = paired.format_difference(results["paired"], "pairs")
    for key, name in MODELS.items():
        m = results["models"][key]
        ci = report.format_interval(m["calib_err"], m["calib_err_lower"], m["calib_err_upper"])
        rows.append(
            [
                f"{name} ({m['hyperparameter']}={m['value']:g})",
                f"{100 * m['f1']:.1f}%",
                f"{100 * m['accuracy']:.1f}%",
                ci,
                m["calib_err_debiased"],
                nb_minus_lr if key == "naive_bayes" else "—",
                m["brier"],
                m["brier_calibration"],
                m["brier_refinement"],
            ]
        )
    for key, name in MODELS.items():
        p = PAPER[key]
        rows.append(
            [f"paper: {name}", f"{100 * p['f1']:.1f}%", "", f"{p['calib_err']:.3f}"] + [""] * 5
        )
    head = ["model", "F1", "accuracy", "CalibErr [95% CI]", "debiased", "NB − LR, paired [95%]",
            "Brier", "calib.", "refin."]  # fmt: skip
    s = results["split"]
    lab = results["labelling"]
    items = _items(results["dataset"])
    by_source = "; ".join(
        f"{source} file: {c['1']} labelled 1, {c['0']} labelled 0"
        for source, c in lab["counts_by_source"].items()
    )
    lines = [
        f"# Sentiment (§4.1) on {results['dataset']}",
        "",
        results["note"],
        "",
        f"Labels: {lab['positive']} positive of {lab['total']} ({by_source}).",
        "",
        f"Split {s['fractions']} (seed {s['seed']}): train {s['sizes'][0]}, dev {s['sizes'][1]}, "
        f"test {s['sizes'][2]} ({s['test_positives']} positive). "
        f"Tokenizer: {results['tokenizer']}; {results['n_features']} binary unigram features. "
        "Adaptive bins of "
        f"{results['bin_size']} ({results['models']['naive_bayes']['n_bins']} bins). "
        "CalibErr [95% CI]: the paper's estimator, plug-in, with its Algorithm 2 interval "
        f"({results['n_samples']} normal draws per bin); debiased: the same bins' debiased "
        "error.",
        "",
        report.markdown_table(head, rows),
        "",
        "Reliability ends (the diagram's lowest and highest bins, mean prediction and share "
        "positive): "
        + "; ".join(f"{name} {_ends(results['models'][key])}" for key, name in MODELS.items())
        + ".",
        "",
        f"NB − LR: error(NB) − error(LR) on the same test {items} (> 0: LR is better "
        "calibrated), debiased with β = ⌈√N⌉, percentile interval of 2000 paired draws "
        f"({items} resampled once for both models), "
        f"{paired.format_p(results['paired']['p_value'], True, results['paired']['samples'])}.",
        "",
        "Model selection on dev (F1 picks; CalibErr shown for comparison only):",
        "",
    ]
    for key, name in MODELS.items():
        m = results["models"][key]
        grid = [
            [f"{v}{' *' if float(v) == m['value'] else ''}", d["f1"], d["calib_err"]]
            for v, d in m["dev"].items()
        ]
        lines += [
            report.markdown_table(
                [f"{name} {m['hyperparameter']}", "dev F1", "dev CalibErr"], grid
            ),
            "",
        ]
    return "\n".join(lines)


def _items(dataset: str) -> str:
    """What the data set's examples are, for the text (the fallback's are not tweets)."""
    return "tweets" if dataset == TWITTER else "sentences"


def _check(args: argparse.Namespace) -> None:
    if args.bin_size is not None:  # None: test size // 10
        options.check_integers(args, bin_size=1)
        # The binning's own bound, which had been said only after training.
        options.check_in_range(args, "bin_size", 1, MAX_BIN_SIZE)
    options.check_draws(args, "n_samples")
    options.check_numbers(args, "alphas", 0, above=True)
    options.check_numbers(args, "cs", 0, above=True)
    try:  # the split is made only once the corpus is read
        check_fractions(args.split)
    except ValueError:
        raise ValueError(
            f"--split: the train, dev and test fractions must be positive and sum to 1, "
            f"got {args.split}"
        ) from None


def _note(corpus, args: argparse.Namespace, fallback: bool) -> str:
    """Where the labels come from, in one sentence for the results."""
    if corpus.emoticon_labelled:
        return (
            f"Labels by the emoticon trick: positive iff the tweet contains '{SMILEY}'; "
            f"emoticons removed before features ({args.emoticons})."
        )
    return (
        f"FALLBACK: {TWITTER} not found, using {POLARITY}"
        if fallback
        else f"{POLARITY} chosen with --dataset"
    ) + " (movie-review snippets, labels from review ratings, not emoticons)."


def _split(corpus, args: argparse.Namespace) -> list[torch.Tensor]:
    """Indices of train / dev / test, stratified (after balancing, if asked)."""
    generator = torch.Generator().manual_seed(args.seed)
    keep = torch.arange(len(corpus.labels))
    if args.balance:
        keep = balanced_subsample(corpus.labels, generator)
    labels = corpus.labels[keep]
    parts = [keep[p] for p in stratified_split(labels, args.split, generator)]
    if min(p.numel() for p in parts) == 0:
        raise ValueError(f"split {args.split} leaves a part empty ({len(keep)} items)")
    return parts


def _features(texts, tokenize, parts, corpus) -> tuple[list[tuple], int]:
    """Binary bag-of-words (x, y) per part, the vocabulary fitted on train."""
    from sklearn.feature_extraction.text import CountVectorizer

    vectorizer = CountVectorizer(
        binary=True, lowercase=True, tokenizer=tokenize, token_pattern=None
    )
    train_x = vectorizer.fit_transform([texts[i] for i in parts[0].tolist()])
    xs = [train_x] + [vectorizer.transform([texts[i] for i in p.tolist()]) for p in parts[1:]]
    ys = [corpus.labels[p].numpy() for p in parts]
    return list(zip(xs, ys, strict=True)), len(vectorizer.vocabulary_)


def _train_and_evaluate(
    args, data, test_y, bin_size: int, models: dict, recal: dict | None = None
) -> tuple[dict, dict]:
    """Select each model's hyperparameter on dev, evaluate it on test; its curves and its
    test probabilities.

    ``recal``, when given, receives each model's (dev probs, dev labels, test probs)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.naive_bayes import BernoulliNB

    factories = {
        "naive_bayes": ("alpha", args.alphas, lambda a: BernoulliNB(alpha=a)),
        "logistic_regression": (
            "C",
            args.cs,
            lambda c: LogisticRegression(C=c, solver="liblinear"),
        ),
    }
    curves, test_probs = {}, {}
    for key, (hyper, grid, factory) in factories.items():
        value, model, dev = select(factory, grid, data[0], data[1], key)
        probs = torch.from_numpy(model.predict_proba(data[2][0])[:, 1]).to(torch.float64)
        test_probs[key] = probs
        if recal is not None:
            dev_probs = torch.from_numpy(model.predict_proba(data[1][0])[:, 1])
            recal[key] = (dev_probs.to(torch.float64), torch.as_tensor(data[1][1]), probs)
        ci_gen = torch.Generator().manual_seed(args.seed)
        metrics, curves[key] = evaluate(probs, test_y, bin_size, args.n_samples, ci_gen)
        models[key] = {
            "hyperparameter": hyper,
            "value": value,
            "dev": {f"{k:g}": v for k, v in dev.items()},
            **metrics,
        }
    return curves, test_probs


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Run the experiment and write ``results.json``, ``results.md`` and the PNGs.

    Example:
        >>> import tempfile
        >>> p = argparse.ArgumentParser(); add_arguments(p)
        >>> try:
        ...     run(p.parse_args(["--data", "/nonexistent", "--out", tempfile.mkdtemp()]))
        ... except FileNotFoundError:
        ...     print("no data")
        no data
    """
    _check(args)
    report.output_folder(args.out)
    corpus, folder = load_corpus(args.data, args.dataset)
    _require_sklearn()
    fallback = corpus.name != TWITTER and args.dataset == "auto"
    texts = _feature_texts(corpus, args.emoticons)
    tok_name, tokenize = make_tokenizer(args.tokenizer)
    parts = _split(corpus, args)
    data, n_features = _features(texts, tokenize, parts, corpus)
    test_y = corpus.labels[parts[2]]
    bin_size = args.bin_size or max(1, len(test_y) // 10)
    # As evaluate says it: one bin sees only the overall means.
    warn_if_few_adaptive_bins(bin_size, len(test_y), f"test {_items(corpus.name)}", at_once=True)
    results: dict[str, Any] = {
        "experiment": "sentiment",
        "dataset": corpus.name,
        "data_dir": str(folder),
        "fallback": fallback,
        "note": _note(corpus, args, fallback),
        "labelling": {
            "rule": f"positive iff text contains '{SMILEY}'"
            if corpus.emoticon_labelled
            else "file",
            "emoticons_removed": args.emoticons if corpus.emoticon_labelled else None,
            "counts_by_source": label_counts(corpus),
            "positive": int(corpus.labels.sum()),
            "total": len(texts),
        },
        "tokenizer": tok_name,
        "balanced": args.balance,
        "split": {
            "fractions": list(args.split),
            "seed": args.seed,
            "sizes": [p.numel() for p in parts],
            "test_positives": int(test_y.sum()),
        },
        "n_features": n_features,
        "bin_size": bin_size,
        "n_samples": args.n_samples,
        "confidence": 0.95,
        "models": {},
        "paper": PAPER,
    }
    recal = {} if getattr(args, "recalibrate", False) else None
    curves, test_probs = _train_and_evaluate(args, data, test_y, bin_size, results["models"], recal)
    # Issue 15: NB against LR on the same test tweets, one paired resampling of tweets.
    results["paired"] = paired.difference(
        test_probs["naive_bayes"], test_probs["logistic_regression"], test_y, seed=args.seed
    )
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    results["figures"] = _figures(results, curves, out)
    if recal is not None:
        results["recalibration"] = _recalibrate(recal, test_y, args, out)
    report.write_json(out / "results.json", results)
    markdown = _markdown(results)
    if recal is not None:
        markdown += (
            "\n\n## Recalibration (fit on dev, test)\n\n" + results["recalibration"]["table"]
        )
    (out / "results.md").write_text(markdown)
    print(markdown)
    return results


def _recalibrate(recal: dict, test_y: torch.Tensor, args: argparse.Namespace, out: Path) -> dict:
    """Platt and isotonic recalibration of NB and LR, fitted on dev, shown on test."""
    from calib_metrics.paper import recalibrate

    rows, curves = [], {}
    for i, (key, (dev_q, dev_y, test_q)) in enumerate(recal.items()):
        r, cv = recalibrate.binary_rows(
            MODELS[key], (dev_q, dev_y.to(torch.float64)), (test_q, test_y.to(torch.float64)),
            seed=args.seed + 100 * i,
        )  # fmt: skip
        rows += r
        curves.update(cv)
    table = recalibrate.markdown(rows)
    figure = recalibrate.figure(curves, out / "sentiment_recalibration.png")
    return {"rows": rows, "table": table, "figure": figure}
