"""The thesis' §4.1-4.2: HMM vs CRF-Basic vs CRF-Advanced, on tweets and on EWT.

``calib-metrics reproduce twitter-pos`` trains on ARK Twitter POS (Oct27 train, the
thesis' 1,000 / 327 / 500 split) an HMM (Dirichlet MAP, pseudocount chosen on dev)
and feature-template CRFs over the nested template sets of
:data:`calib_metrics.models.features.ABLATION` (basic = CRF-Basic, tag-tag and
tag-word; +shape = CRF-Advanced), each with its L2 strength chosen on dev. On Oct27
test (and Daily547, out of time) it reports accuracy and CalibErr of the thesis'
query "the word has tag V", of all tags concatenated and per tag, in the paper's
setting and the recommended one; the same three models on a subset of UD English-EWT
answer "the word has tag NN" (thesis Figures 4.1-4.3). MSE (the thesis' score) is
CalibErr². Figures: one calibration curve per model, the thesis' layout.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import torch

from calib_metrics.functional import compare_calibration
from calib_metrics.models.features import ABLATION
from calib_metrics.paper import chain_eval as ce
from calib_metrics.paper import options, report
from calib_metrics.paper.ark_twitter import load_ark_twitter
from calib_metrics.paper.locations import data_file, data_help, find_dataset
from calib_metrics.paper.paired import format_difference
from calib_metrics.paper.tagging import Vocabulary, read_tagged_sentences
from calib_metrics.paper.thesis_figures import Curve, thesis_figure
from calib_metrics.queries import tag_queries
from calib_metrics.report import p_value_phrase

DESCRIPTION = "thesis §4.1-4.2: HMM vs CRF-Basic vs CRF-Advanced (tweets: tag V; EWT: tag NN)"

MODELS = {"hmm": "HMM", "basic": "CRF-Basic", "+shape": "CRF-Advanced"}
HMM_GRID = (1e-3, 1e-2, 0.1, 1.0)
THESIS = {
    "ewt_nn": "WSJ, query NN: MSE CRF-Basic 0.019 vs HMM 0.035 (ratio 0.54)",
    "twitter_basic": "tweets, query V: CRF-Basic's miscalibration about half the HMM's",
    "twitter_advanced": "tweets, query V: CRF-Advanced about half CRF-Basic's, at 87% accuracy",
    "ablation": "better templates give more refined and calibrated predictions",
}
# The tweets --quick keeps of each split.
QUICK_LIMITS = {"train": 250, "dev": 80, "test": 120, "daily547": 80}
# EWT's dev and test sentences under --quick; its train is --ewt-train's quick default.
QUICK_EWT_LIMITS = {"dev": 80, "test": 120}
# The options --quick sets when not given: (full run, --quick).
QUICK = {"max_iter": (100, 30), "ewt_train": (3000, 250), "n_samples": (2000, 200)}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``calib-metrics reproduce twitter-pos``.

    Example:
        >>> p = argparse.ArgumentParser()
        >>> add_arguments(p)
        >>> a = p.parse_args(["--quick"])
        >>> a.quick, a.c2, a.ewt_train
        (True, [0.1], None)
    """
    parser.add_argument("--data", default=None, help=data_help())
    options.add_out(parser, "twitter-pos")
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"small subsets, fewer iterations and draws, for tests ({options.QUICK_WINS})",
    )
    parser.add_argument(
        "--c2", type=float, nargs="+", default=[0.1], help="L2 grid, chosen on dev accuracy"
    )
    parser.add_argument(
        "--max-iter",
        type=int,
        default=None,
        help=options.quick_help("L-BFGS iterations per fit", QUICK, "max_iter"),
    )
    parser.add_argument("--buckets", type=int, default=2**16, help="feature hash buckets")
    parser.add_argument(
        "--ewt-train",
        type=int,
        default=None,
        help=options.quick_help("EWT training sentences, 0 skips EWT", QUICK, "ewt_train"),
    )
    parser.add_argument(
        "--n-samples",
        type=int,
        default=None,
        # Some 700 intervals: at 2000 draws they had taken a quarter of a --quick run.
        help=options.quick_help("interval draws", QUICK, "n_samples"),
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the intervals")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")


def _splits(raw: dict, limits: dict) -> tuple[dict[str, ce.Tagged], Vocabulary, dict[str, int]]:
    """Encode each split (its first ``limits[split]`` sentences, where given)."""
    raw = {k: v[: limits.get(k, len(v))] for k, v in raw.items()}
    word_vocab = Vocabulary.build(w for w, _ in raw["train"])
    tag_vocab = Vocabulary.build((t for _, t in raw["train"]), unknown=False)
    out, dropped = {}, {}
    for name, sentences in raw.items():
        kept, dropped[name] = ce.keep_known_tags(sentences, tag_vocab)
        out[name] = ce.encode(kept, word_vocab, tag_vocab)
    sentences = {name: len(split.sentences) for name, split in out.items()}
    return out, tag_vocab, {"words": len(word_vocab), "sentences": sentences, "dropped": dropped}


def _train(data: dict[str, ce.Tagged], n_tags: int, n_words: int, steps, args) -> dict:
    """HMM and one feature CRF per template set: ``{key: (model, hasher or None, info)}``."""
    hmm, info = ce.fit_hmm(data["train"], data["dev"], n_tags, n_words, HMM_GRID)
    trained: dict[str, Any] = {"hmm": (hmm, None, info)}
    for step in steps:
        begin = time.perf_counter()
        model, hasher, info = ce.fit_crf(
            ABLATION[step],
            data["train"],
            data["dev"],
            n_tags,
            buckets=args.buckets,
            c2_grid=args.c2,
            max_iter=args.max_iter,
        )
        trained[step] = (model, hasher, info | {"seconds": time.perf_counter() - begin})
        print(f"  {step}: c2 {info['c2']}, dev acc {info['grid'][info['c2']]:.4f}", file=sys.stderr)
    return trained


def _evaluate(model, hasher, split: ce.Tagged, query: int, tag_names, args, seed: int) -> dict:
    """Accuracy, and CalibErr of the query tag, all tags and each tag, in both settings."""
    x = split.words if hasher is None else ce.features(split, hasher)
    unigram = model.marginals(x, split.mask, pairwise=False).unigram
    q, y = tag_queries(unigram, split.tags, split.mask, per_tag=True)
    groups = ce.sentence_ids(split.mask)
    n = args.n_samples
    out: dict[str, Any] = {"accuracy": ce.accuracy(model, x, split), "tokens": int(q.shape[1])}
    for name, setting in (("paper", ce.PAPER_SETTING), ("recommended", ce.RECOMMENDED_SETTING)):

        def calib(qq, yy, gg, s, setting=setting):
            return ce.calibration(qq, yy, setting, groups=gg, seed=s, n=n)

        all_groups = groups.repeat(q.shape[0])
        out[name] = {
            "query": calib(q[query], y[query], groups, seed),
            "all_tags": calib(q.reshape(-1), y.reshape(-1), all_groups, seed + 1),
            "per_tag": {
                tag_names[k]: calib(q[k], y[k], groups, seed + 2 + k)["error"]
                for k in range(q.shape[0])
                if y[k].any()
            },
        }
    out["_q"] = q[query]
    out["_y"] = y[query]
    out["_groups"] = groups
    return out


def _paired(results: dict, a: str, b: str, args) -> dict:
    """Paired difference of the query's CalibErr, a minus b, on the same tokens."""
    ra, rb = results[a], results[b]
    g = torch.Generator().manual_seed(args.seed)
    options = dict(ce.RECOMMENDED_SETTING)
    out = compare_calibration(
        ra["_q"].double(),
        rb["_q"].double(),
        ra["_y"].double(),
        groups=ra["_groups"],
        generator=g,
        n_samples=args.n_samples,
        **{k: v for k, v in options.items() if k != "interval"},
    )
    fields = ("difference", "lower", "upper", "p_value")
    return {k: float(getattr(out, k)) for k in fields} | {"n_samples": args.n_samples}


def _corpus_block(data, tag_vocab, query_tag: str, trained: dict, args, seed: int) -> dict:
    query = tag_vocab[query_tag]
    tests = [k for k in ("test", "daily547") if k in data]
    block: dict[str, Any] = {}
    for i, (key, (model, hasher, info)) in enumerate(trained.items()):
        block[key] = {"selection": info}
        for split in tests:
            block[key][split] = _evaluate(
                model, hasher, data[split], query, tag_vocab.itos, args, seed + 100 * i
            )
    comparisons = {}
    for a, b in (("basic", "hmm"), ("+shape", "basic"), ("+shape", "hmm")):
        if a in block and b in block:
            comparisons[f"{a} - {b}"] = _paired({k: block[k]["test"] for k in (a, b)}, a, b, args)
    return {"query_tag": query_tag, "models": block, "paired": comparisons}


def _load_ewt(args) -> dict[str, list]:
    folder = find_dataset("ud-english-ewt", args.data)
    limits = {"train": args.ewt_train, "dev": 500, "test": None}
    if args.quick:
        limits |= QUICK_EWT_LIMITS
    out = {}
    for split, limit in limits.items():
        names = [f"en_ewt-ud-{split}.conllu{e}" for e in (".gz", "")]
        path = data_file(folder, "ud-english-ewt", names)
        out[split] = read_tagged_sentences(path, "xpos", limit=limit)
        if not out[split]:  # had surfaced as encode_batch's "needs at least one sentence"
            raise ValueError(f"{path} holds no sentences")
    return out


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Train, evaluate and write results, tables and figures."""
    options.settle(args, QUICK)
    # --ewt-train 0 skips EWT.
    options.check_integers(args, threads=1, max_iter=1, buckets=2, ewt_train=0)
    options.check_draws(args, "n_samples")
    options.check_numbers(args, "c2", 0)
    # Many small per-step products: extra threads only add synchronisation.
    with report.torch_threads(args.threads):
        return _run(args)


def _run(args: argparse.Namespace) -> dict[str, Any]:
    begin = time.perf_counter()
    out = report.output_folder(args.out)
    results: dict[str, Any] = {"experiment": "twitter-pos", "quick": args.quick, "thesis": THESIS}
    # Both corpora are read before any training: a missing EWT file had surfaced only
    # after the tweet models were trained, as a StopIteration traceback.
    tweets = load_ark_twitter(args.data)
    ewt = _load_ewt(args) if args.ewt_train > 0 else None
    data, tags, sizes = _splits(tweets, QUICK_LIMITS if args.quick else {})
    out.mkdir(parents=True, exist_ok=True)
    print(f"twitter-pos: tweets {[len(v.sentences) for v in data.values()]}", file=sys.stderr)
    trained = _train(data, len(tags), sizes["words"], list(ABLATION), args)
    results["twitter"] = _corpus_block(data, tags, "V", trained, args, args.seed) | sizes
    if ewt is not None:
        data, tags, sizes = _splits(ewt, {})  # read as limited
        print(f"twitter-pos: EWT {[len(v.sentences) for v in data.values()]}", file=sys.stderr)
        trained = _train(data, len(tags), sizes["words"], ["basic", "+shape"], args)
        results["ewt"] = _corpus_block(data, tags, "NN", trained, args, args.seed + 7) | sizes
    results["figures"] = _figures(results, out)
    results["seconds"] = time.perf_counter() - begin
    results = ce.strip(_drop_private(results))
    report.write_json(out / "results.json", results)
    (out / "results.md").write_text(markdown(results))
    print(markdown(results))
    print(f"wrote {out / 'results.json'}, {out / 'results.md'}")
    return results


def _drop_private(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _drop_private(v) for k, v in value.items() if k not in ("_q", "_y", "_groups")}
    return value


def _figures(results: dict, out: Path) -> dict[str, str]:
    """Per corpus, the thesis' Figures 4.1-4.6: the models overlaid, then one panel each."""
    paths = {}
    for corpus, label in (("twitter", "POS Tweet"), ("ewt", "POS EWT")):
        if corpus not in results:
            continue
        block = results[corpus]
        curves = []
        for key, name in MODELS.items():
            r = block["models"][key]["test"]
            caption = (
                f"{name} ({label}), Acc = {r['accuracy']:.3f},\n"
                f"CalibScore (MSE, paper setting) = {r['paper']['query']['mse']:.5f}"
            )
            curves.append(Curve(name, caption, r["recommended"]["query"]["_result"]))
        query = f"{label}: the word has tag {block['query_tag']}"
        path = thesis_figure(
            [(query, curves)],
            out / f"{corpus}_reliability.png",
            suptitle=f"{query} (curves: bins of ⌈√N⌉, debiased CalibErr, sentence bootstrap)",
        )
        paths[corpus] = Path(path).name  # relative to --out: an absolute path breaks when it moves
    return paths


def markdown(results: dict) -> str:
    """The thesis comparison, per-corpus (ablation) and per-tag tables of a results dict."""
    lines = _thesis_table(results)
    for corpus in ("twitter", "ewt"):
        if corpus in results:
            lines += _corpus_tables(results[corpus], corpus)
            lines += _per_tag_table(results[corpus])
    return "\n".join(lines) + "\n"


def _query(results: dict, corpus: str, model: str) -> dict:
    return results[corpus]["models"][model]["test"]


def _ratio_row(results: dict, corpus: str, a: str, b: str, claim: str, thesis: float) -> list:
    """A thesis claim "MSE(a) / MSE(b) = thesis" beside our ratios in both settings."""
    ra, rb = _query(results, corpus, a), _query(results, corpus, b)
    ours = []
    for setting in ("paper", "recommended"):
        ea, eb = ra[setting]["query"]["error"], rb[setting]["query"]["error"]
        ratio = f"{(ea / eb) ** 2:.2f}" if eb > 0 else "n/a"
        ours.append(f"{ea**2:.5f} / {eb**2:.5f} = {ratio}")
    paired = results[corpus]["paired"].get(f"{a} - {b}")
    diff = "n/a (not compared)" if paired is None else format_difference(paired, "sentences")
    return [claim, f"{thesis:.2f}", *ours, diff]


def _thesis_table(results: dict) -> list[str]:
    rows = []
    if "ewt" in results:
        rows.append(
            _ratio_row(results, "ewt", "basic", "hmm", "NN query: CRF-Basic vs HMM", 0.019 / 0.035)
        )
    rows.append(_ratio_row(results, "twitter", "basic", "hmm", "V query: CRF-Basic vs HMM", 0.5))
    rows.append(
        _ratio_row(results, "twitter", "+shape", "basic", "V query: CRF-Advanced vs Basic", 0.5)
    )
    headers = [
        "thesis claim (MSE = CalibErr²)",
        "thesis MSE ratio",
        "ours, paper setting: MSE a / MSE b = ratio",
        "ours, recommended: MSE a / MSE b = ratio",
        "paired CalibErr difference a − b [95%]",
    ]
    acc = _query(results, "twitter", "+shape")["accuracy"]
    wsj = (
        " The thesis' WSJ numbers are set beside EWT (web text, a subset of train)."
        if "ewt" in results
        else " EWT was not run (--ewt-train 0), so the thesis' WSJ claim has no row."
    )
    return [
        "### The thesis' statements beside ours",
        "",
        report.markdown_table(headers, rows),
        "",
        f"CRF-Advanced's accuracy on Oct27 test: {acc:.1%} (thesis: 87%).{wsj}",
        "",
    ]


def _per_tag_table(block: dict) -> list[str]:
    """Per-tag CalibErr (recommended setting) of HMM, CRF-Basic, CRF-Advanced; tag wins."""
    models = {k: block["models"][k]["test"]["recommended"]["per_tag"] for k in MODELS}
    tags = list(models["hmm"])
    rows = [[t, *(models[k].get(t, float("nan")) for k in MODELS)] for t in tags[:25]]
    lines = [
        "Per-tag CalibErr, recommended setting (debiased, so 0 where the gaps are within "
        f"noise); the {len(rows)} most frequent training tags that occur in test:",
        "",
        report.markdown_table(["tag", *MODELS.values()], rows),
        "",
    ]
    # Counted over every tag in test, as the table's rows are cut at 25: say so.
    every = f" (every tag in test; the table shows {len(rows)})" if len(rows) < len(tags) else ""
    for a, b in (("basic", "hmm"), ("+shape", "basic")):
        wins = sum(models[a][t] < models[b][t] for t in tags)
        lines.append(f"- {MODELS[a]} below {MODELS[b]} on {wins} of {len(tags)} tags{every}")
    return [*lines, ""]


def _ci(r: dict) -> str:
    return report.format_interval(r["error"], r["lower"], r["upper"])


def _corpus_tables(block: dict, corpus: str) -> list[str]:
    tag = block["query_tag"]
    headers = [
        "model",
        "c2 / pseudocount",
        "test acc",
        f"{tag}: CalibErr paper [95%]",
        f"{tag}: MSE paper",
        f"{tag}: CalibErr recommended [95%]",
        "all tags: paper",
        "all tags: recommended",
        "Daily547 acc",
        f"Daily547 {tag}: recommended",
    ]
    rows = []
    for key, m in block["models"].items():
        sel = m["selection"]
        t = m["test"]
        row = [
            MODELS.get(key, f"CRF {key}") + (f" ({key})" if key in ("basic", "+shape") else ""),
            sel.get("c2", sel.get("pseudocount")),
            t["accuracy"],
            _ci(t["paper"]["query"]),
            f"{t['paper']['query']['mse']:.5f}",
            _ci(t["recommended"]["query"]),
            _ci(t["paper"]["all_tags"]),
            _ci(t["recommended"]["all_tags"]),
        ]
        d = m.get("daily547")
        row += [d["accuracy"], _ci(d["recommended"]["query"])] if d else ["n/a", "n/a"]
        rows.append(row)
    title = "ARK Twitter POS, Oct27 test" if corpus == "twitter" else "UD English-EWT test"
    note = ce.dropped_note(block["sentences"], block["dropped"])
    lines = [
        f"### {title}: query “the word has tag {tag}”",
        "",
        *([note, ""] if note else []),
        report.markdown_table(headers, rows),
        "",
        ce.SETTINGS_LEGEND,
    ]
    paired = {k: v for k, v in block["paired"].items() if v is not None}
    if paired:
        lines += ["", "Paired differences of the query's CalibErr (recommended setting):", ""]
        lines += [
            f"- {k}: {format_difference(v, 'sentences')}, "
            f"{p_value_phrase(v['p_value'], v['n_samples'])}"
            for k, v in paired.items()
        ]
    return [*lines, ""]
