"""Entity calibration from a linear chain: typed mentions of GUM (thesis §3.4's span queries).

``calib-metrics reproduce ner`` flattens GUM's nested entity mentions to
non-overlapping spans (:func:`~calib_metrics.paper.gum_entities.flatten`: longest
first, at most ``--max-length`` words), tags them BIO (or BILOU, ``--scheme bilou``),
and trains a feature-template CRF (the CRF-Advanced templates) on a subset of GUM
train. Decoding and marginals forbid ill-formed transitions (BIO: ``O`` or ``B-Y``
followed by ``I-X``, a sentence starting with ``I-X``; BILOU also: ``B-X`` or ``I-X``
followed by anything but ``I-X``/``L-X``, or ending a sentence). On GUM test it reports

- token level: the one-vs-rest queries "token t has tag k", all tags concatenated;
- span level: "words [t, t+l] are one entity of type X", whose exact probability
  :func:`calib_metrics.queries.span_marginals` gives, for the spans the Viterbi path
  predicts and for each sentence's top-k candidate spans (all types, all lengths, inside
  the sentence);

in the paper's setting and the recommended one, with reliability diagrams.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import torch

from calib_metrics.models import linear_chain
from calib_metrics.models.features import ABLATION
from calib_metrics.paper import chain_eval as ce
from calib_metrics.paper import options, report
from calib_metrics.paper.gum_entities import (
    ENTITY_TYPES,
    EntitySentence,
    bilou_tags,
    bio_spans,
    bio_tags,
    flatten,
    read_gum_entities,
)
from calib_metrics.paper.locations import data_file, data_help, find_dataset
from calib_metrics.paper.tagging import TaggedSentence, Vocabulary
from calib_metrics.paper.thesis_figures import Curve, thesis_figure
from calib_metrics.queries import span_indicators, span_marginals, spans_inside, tag_queries
from calib_metrics.report import not_computed

DESCRIPTION = "thesis §3.4: entity-span calibration of a feature CRF on GUM (span_marginals)"
# --quick's dev and test sentences; its train subset is --train-sentences' quick default.
QUICK_LIMITS = {"dev": 80, "test": 120}
# The options --quick sets when not given: (full run, --quick).
QUICK = {"train_sentences": (3000, 300), "max_iter": (100, 30)}
SCHEMES = ("bio", "bilou")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``calib-metrics reproduce ner``.

    Example:
        >>> p = argparse.ArgumentParser()
        >>> add_arguments(p)
        >>> a = p.parse_args([])
        >>> a.max_length, a.top_k, a.train_sentences, a.scheme
        (6, 10, None, 'bio')
    """
    parser.add_argument("--data", default=None, help=data_help())
    options.add_out(parser, "ner")
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"small subsets and fewer iterations, for tests ({options.QUICK_WINS}; "
        f"{options.QUICK_PREFIX})",
    )
    parser.add_argument(
        "--train-sentences",
        type=int,
        default=None,
        help=options.quick_help("GUM train subset", QUICK, "train_sentences"),
    )
    parser.add_argument("--max-length", type=int, default=6, help="longest span (words)")
    parser.add_argument("--top-k", type=int, default=10, help="candidate spans per sentence")
    parser.add_argument(
        "--scheme", choices=SCHEMES, default="bio", help="entity tagging: BIO or BILOU"
    )
    parser.add_argument("--c2", type=float, nargs="+", default=[0.1], help="L2 grid (dev)")
    parser.add_argument(
        "--max-iter",
        type=int,
        default=None,
        help=options.quick_help("L-BFGS iterations", QUICK, "max_iter"),
    )
    parser.add_argument("--buckets", type=int, default=2**17, help="feature hash buckets")
    parser.add_argument("--n-samples", type=int, default=2000, help="interval draws")
    parser.add_argument("--seed", type=int, default=0, help="seed of the intervals")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")


def bio_vocabulary(types: list[str], scheme: str = "bio") -> Vocabulary:
    """``O``, then ``B-X``, ``I-X`` (BILOU: and ``L-X``, ``U-X``) for each type.

    Example:
        >>> bio_vocabulary(["person"]).itos
        ['O', 'B-person', 'I-person']
        >>> bio_vocabulary(["person"], "bilou").itos
        ['O', 'B-person', 'I-person', 'L-person', 'U-person']
    """
    prefixes = {"bio": "BI", "bilou": "BILU"}[scheme]
    return Vocabulary(["O", *(f"{p}-{t}" for t in types for p in prefixes)], unknown=False)


def bio_constraints(tags: Vocabulary) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Additive masks ``(transitions [K, K], start [K], end [K])``: 0 allowed, -inf not.

    ``I-X`` (and BILOU's ``L-X``) may follow only ``B-X`` or ``I-X`` and start no
    sentence; with BILOU tags (any ``L-`` in ``tags``), ``B-X`` and ``I-X`` must be
    followed by ``I-X`` or ``L-X`` and end no sentence.

    Example:
        >>> trans, start, end = bio_constraints(bio_vocabulary(["person"]))
        >>> trans[:, 2].tolist(), start.tolist(), end.tolist()
        ([-inf, 0.0, 0.0], [0.0, 0.0, -inf], [0.0, 0.0, 0.0])
        >>> trans, start, end = bio_constraints(bio_vocabulary(["person"], "bilou"))
        >>> trans[1].tolist(), end.tolist()  # after B-person: I- or L-person only
        ([-inf, -inf, 0.0, 0.0, -inf], [0.0, -inf, -inf, 0.0, 0.0])
    """
    k = len(tags)
    names = tags.itos
    bilou = any(name.startswith("L-") for name in names)
    allowed = torch.ones(k, k, dtype=torch.bool)
    start = torch.zeros(k)
    end = torch.zeros(k)
    for j, name in enumerate(names):
        kind, label = name[:2], name[2:]
        if kind in ("I-", "L-"):  # continues a span of its type
            allowed[:, j] = torch.tensor([p in (f"B-{label}", f"I-{label}") for p in names])
            start[j] = float("-inf")
        if bilou and kind in ("B-", "I-"):  # an open span must go on
            allowed[j] &= torch.tensor([n in (f"I-{label}", f"L-{label}") for n in names])
            end[j] = float("-inf")
    trans = torch.zeros(k, k).masked_fill(~allowed, float("-inf"))
    return trans, start, end


def _load(args) -> tuple[dict, Path, bool]:
    """Each split's sentences, the dataset's folder, and whether the training file holds
    more sentences than the ``--train-sentences`` read (what a refusal may advise)."""
    folder = find_dataset("ud-english-gum", args.data)
    limits = {"train": args.train_sentences, "dev": 500, "test": None}
    if args.quick:
        limits |= QUICK_LIMITS
    raw, more_training = {}, False
    for split, limit in limits.items():
        names = [f"en_gum-ud-{split}.conllu{e}" for e in (".gz", "")]
        path = data_file(folder, "ud-english-gum", names)
        if split == "train" and limit is not None:  # one more says whether there are more
            sentences = read_gum_entities(path, limit=limit + 1)
            raw[split], more_training = sentences[:limit], len(sentences) > limit
        else:
            raw[split] = read_gum_entities(path, limit=limit)
        if not raw[split]:  # had surfaced as encode_batch's "needs at least one sentence"
            raise ValueError(f"{path} holds no sentences")
    return raw, folder, more_training


def tagged_splits(
    raw: dict, max_length: int, scheme: str = "bio", *, more_training: bool = False
) -> tuple[dict[str, ce.Tagged], Vocabulary, dict[str, int]]:
    """Flatten, BIO- (or BILOU-) tag and encode every split (types: train's, GUM's order);
    and how many dev and test sentences were left out for a type train's tags lack.

    Train's types are those its flattened mentions keep: a type that training holds only
    in mentions longer than ``max_length`` (or inside a longer kept one) is not among them.
    A refusal advises more training sentences only where the training file holds more
    (``more_training``).
    """
    tagger = {"bio": bio_tags, "bilou": bilou_tags}[scheme]
    flat = {
        split: [(s.words, tagger(len(s.words), flatten(s.spans, max_length))) for s in sents]
        for split, sents in raw.items()
    }
    seen = _types(flat["train"])
    n_train = len(flat["train"])
    if not seen:  # span_tables had failed in torch.stack with no type to stack
        raise ValueError(_no_entity(raw["train"], max_length, more_training))
    ordered = [t for t in ENTITY_TYPES if t in seen] + sorted(seen - set(ENTITY_TYPES))
    tags = bio_vocabulary(ordered, scheme)
    words = Vocabulary.build(w for w, _ in flat["train"])
    out, dropped = {}, {}
    for split, sentences in flat.items():
        kept, dropped[split] = ce.keep_known_tags([s for s in sentences if s[0]], tags)
        if not kept:  # had surfaced as encode_batch's "needs at least one sentence"
            training = _training(n_train, "do not tag", "does not tag")
            problem = f"every {split} sentence holds an entity type that {training}"
            unseen = _types(sentences) - seen
            raise ValueError(_refusal(problem, unseen, raw["train"], max_length, more_training))
        out[split] = ce.encode(kept, words, tags)
    return out, tags, {split: dropped[split] for split in ("dev", "test")}


def _flattened(max_length: int) -> str:
    """How train's tags come from its mentions, which decides the types it knows."""
    words = "word" if max_length == 1 else "words"
    return (
        "once nested mentions are flattened, keeping none longer than --max-length "
        f"{max_length} {words}"
    )


def _types(sentences: list[TaggedSentence]) -> set[str]:
    """The entity types the (flattened) tags of ``sentences`` hold."""
    return {t[2:] for _, tags in sentences for t in tags if t != "O"}


def _training(n: int, plural: str, singular: str) -> str:
    """The ``n`` training sentences with the verb phrase that agrees with ``n``."""
    return (
        f"the {n} training sentences {plural}" if n != 1 else f"the 1 training sentence {singular}"
    )


def _shortest(train: list[EntitySentence]) -> dict[str, int]:
    """Each type training mentions, with the length (words) of its shortest mention."""
    shortest: dict[str, int] = {}
    for span in (s for sentence in train for s in sentence.spans):
        length = span.end - span.start
        shortest[span.label] = min(length, shortest.get(span.label, length))
    return shortest


def _no_entity(train: list[EntitySentence], max_length: int, more_training: bool) -> str:
    """Why training's flattened tags hold no entity, and what would give them one."""
    mentioned = set(_shortest(train))
    if mentioned:  # every mention is longer than max_length: flatten keeps none
        problem = _training(len(train), "tag no entity", "tags no entity")
        return _refusal(problem, mentioned, train, max_length, more_training)
    if more_training:
        read = _training(len(train), "read mention no entity", "read mentions no entity")
        return f"{read}: train on more (--train-sentences)"
    n = len(train)
    return (
        f"the training file ({n} sentence{'s' * (n != 1)}, all read) has no entity "
        "annotation (no mention to flatten)"
    )


def _refusal(
    problem: str,
    unseen: set[str],
    train: list[EntitySentence],
    max_length: int,
    more_training: bool,
) -> str:
    """``problem`` with what to change: --max-length where it took a type from training,
    --train-sentences where the training file holds more sentences; else why neither."""
    shortest = _shortest(train)
    long = sorted((n, t) for t, n in shortest.items() if t in unseen and n > max_length)
    fixes = [_raise_max_length(long)] if long else []
    if more_training:
        fixes.append("train on more (--train-sentences)")
    absent = sorted(unseen - set(shortest))
    if fixes:
        why = ", or ".join(fixes)
    elif absent:
        why = f"the training file, all read, mentions no {', '.join(absent)}"
    else:  # only inside longer mentions, which flattening keeps in their place
        why = f"training holds {', '.join(sorted(unseen))} only inside longer mentions"
    return f"{problem} {_flattened(max_length)}: {why}"


def _raise_max_length(shortest: list[tuple[int, str]]) -> str:
    """The least --max-length that can keep each type: its shortest mention's length."""
    to = (
        str(shortest[0][0])
        if len(shortest) == 1
        else ", ".join(f"{n} for {t}" for n, t in shortest)
    )
    types = ", ".join(t for _, t in shortest)
    return f"raise --max-length to {to} (training holds {types} only in longer mentions)"


def constrained_potentials(model, x: torch.Tensor, mask: torch.Tensor, tags: Vocabulary):
    """The CRF's potentials with ill-formed BIO (or BILOU) transitions at -inf."""
    trans_mask, start_mask, end_mask = bio_constraints(tags)
    with torch.no_grad():
        em, tr, st, en = model.potentials(x, mask)
        return em, tr + trans_mask.to(tr), st + start_mask.to(st), en + end_mask.to(en)


def _span_tags(tags: Vocabulary, label: str) -> dict[str, int]:
    """The span arguments of ``label``: ``begin``, ``inside`` (BILOU: ``last``, ``unit``)."""
    roles = {"begin": "B", "inside": "I", "last": "L", "unit": "U"}
    return {role: tags[f"{p}-{label}"] for role, p in roles.items() if f"{p}-{label}" in tags}


def span_tables(potentials, split: ce.Tagged, tags: Vocabulary, max_length: int):
    """``(probs, gold)``, each ``[B, T, L, X]``: P(span [t, t+l] is one X) and whether it is."""
    types = [name[2:] for name in tags.itos if name.startswith("B-")]
    spans = [_span_tags(tags, x) for x in types]
    probs = torch.stack(
        [span_marginals(*potentials, split.mask, max_length=max_length, **s) for s in spans], -1
    )
    gold = torch.stack(
        [span_indicators(split.tags, split.mask, max_length=max_length, **s) for s in spans], -1
    ).to(probs.dtype)
    return probs, gold, types


def predicted_spans(path: torch.Tensor, split: ce.Tagged, tags: Vocabulary, types: list[str]):
    """Index tensors ``(b, t, l, x)`` of the spans on the Viterbi paths.

    ``l + 1`` is the span's length, which may exceed the span table's ``max_length``
    (a first-order chain cannot bound it); the caller drops those from the queries.
    """
    rows = []
    for b, length in enumerate(split.mask.sum(1).tolist()):
        names = tags.decode(path[b, :length].tolist())
        rows += [(b, s, e - s - 1, types.index(lab)) for s, e, lab in bio_spans(names)]
    return torch.tensor(rows, dtype=torch.long).reshape(-1, 4).unbind(1)


def top_k_spans(
    probs: torch.Tensor, mask: torch.Tensor, k: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Flat indices of each sentence's ``k`` most probable candidate spans, and sentence ids.

    The candidates of ``probs`` (``[B, T, L, X]``) are the spans inside their sentence
    (``mask``), as for ``span_queries(top_k=...)``, which ranks one type's table: a
    sentence with fewer than ``k`` has them all, not spans past its end to fill up.

    Example:
        >>> p = torch.tensor([[0.1, 0.7, 0.2], [0.5, 0.0, 0.4]]).reshape(2, 3, 1, 1)
        >>> idx, rows = top_k_spans(p, torch.tensor([[True] * 3, [True, True, False]]), 2)
        >>> idx.tolist(), rows.tolist()
        ([1, 2, 3, 4], [0, 0, 1, 1])
    """
    batch = probs.shape[0]
    inside = spans_inside(mask.to(probs.device), probs.shape[2])  # [B, T, L]
    keep = inside[..., None].expand_as(probs).reshape(batch, -1)
    flat = probs.reshape(batch, -1).masked_fill(~keep, -1.0)
    top = flat.topk(min(k, flat.shape[1]), dim=1).indices
    rows = torch.arange(batch, device=probs.device)[:, None].expand_as(top)
    chosen = keep.gather(1, top)
    return (rows * flat.shape[1] + top)[chosen], rows[chosen]


def _calibrate(q, y, groups, args, seed, empty: str = "") -> dict:
    """Both settings' CalibErr; with no pairs, ``n`` 0 and why (``empty``) instead."""
    settings = (("paper", ce.PAPER_SETTING), ("recommended", ce.RECOMMENDED_SETTING))
    if q.numel() == 0:
        return {name: {"n": 0, "not_computed": empty} for name, _ in settings}
    return {
        name: ce.calibration(q, y, setting, groups=groups, seed=seed, n=args.n_samples)
        for name, setting in settings
    }


def evaluate(model, hasher, split: ce.Tagged, tags: Vocabulary, args) -> dict:
    """Token-level and span-level calibration, and span precision / recall / F1."""
    x = ce.features(split, hasher)
    pot = constrained_potentials(model, x, split.mask, tags)
    marg = linear_chain.posterior_marginals(*pot, split.mask, pairwise=False).unigram
    path = linear_chain.viterbi(*pot, split.mask)[1]
    q, y = tag_queries(marg, split.tags, split.mask)
    sentences = ce.sentence_ids(split.mask)
    out: dict[str, Any] = {
        "token_accuracy": float((path == split.tags)[split.mask].double().mean()),
        "token": _calibrate(q, y, sentences.repeat(len(tags)), args, args.seed),
    }
    probs, gold, types = span_tables(pot, split, tags, args.max_length)
    b, t, l, k = predicted_spans(path, split, tags, types)
    short = l < args.max_length  # longer predicted spans are wrong: gold spans are short
    n_long = int((~short).sum())
    b, t, l, k = b[short], t[short], l[short], k[short]
    pred_q, pred_y = probs[b, t, l, k], gold[b, t, l, k]
    # A CRF trained on few sentences may tag no entity: the other rows still hold.
    empty = (
        "every predicted span is longer than --max-length"
        if n_long
        else "the Viterbi paths predict no entity span"
    )
    out["predicted_spans"] = _calibrate(pred_q, pred_y, b, args, args.seed + 1, empty=empty)
    idx, rows = top_k_spans(probs, split.mask, args.top_k)
    top_q, top_y = probs.reshape(-1)[idx], gold.reshape(-1)[idx]
    out[f"top{args.top_k}_spans"] = _calibrate(top_q, top_y, rows, args, args.seed + 2)
    n_gold, n_hit = float(gold.sum()), float(pred_y.sum())
    n_pred = float(pred_y.numel() + n_long)
    # 0/0 is no score: precision with no span predicted, recall with none gold, and F1
    # (2 hits / (predicted + gold)) with neither; 75 gold and 0 predicted is F1 = 0.
    precision = n_hit / n_pred if n_pred else None
    recall = n_hit / n_gold if n_gold else None
    f1 = 2 * n_hit / (n_pred + n_gold) if n_pred + n_gold else None
    out["spans"] = {
        "gold": int(n_gold),
        "predicted": int(n_pred),
        "predicted_too_long": n_long,
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "expected_correct_predicted": float(pred_q.sum()),
        "expected_gold_spans": float(probs.sum()),
    }
    return out


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Train the CRF, evaluate token and span calibration, write results and figures."""
    options.settle(args, QUICK)
    options.check_integers(
        args, threads=1, max_iter=1, top_k=1, max_length=1, train_sentences=1, buckets=2
    )
    options.check_draws(args, "n_samples")
    options.check_numbers(args, "c2", 0)
    with report.torch_threads(args.threads):
        return _run(args)


def _run(args: argparse.Namespace) -> dict[str, Any]:
    begin = time.perf_counter()
    out = report.output_folder(args.out)
    raw, folder, more_training = _load(args)
    out.mkdir(parents=True, exist_ok=True)
    data, tags, dropped = tagged_splits(
        raw, args.max_length, args.scheme, more_training=more_training
    )
    print(f"ner: {folder.name}: {[len(v.sentences) for v in data.values()]}", file=sys.stderr)
    model, hasher, selection = ce.fit_crf(
        ABLATION["+shape"],
        data["train"],
        data["dev"],
        len(tags),
        buckets=args.buckets,
        c2_grid=args.c2,
        max_iter=args.max_iter,
    )
    test = evaluate(model, hasher, data["test"], tags, args)
    results = {
        "experiment": "ner",
        "dataset": folder.name,
        "quick": args.quick,
        "max_length": args.max_length,
        "top_k": args.top_k,
        "scheme": args.scheme,
        "tags": tags.itos,
        "sentences": {k: len(v.sentences) for k, v in data.items()}
        | {"dropped_unknown_tag": dropped},
        "selection": selection,
        "test": test,
    }
    results["figure"] = _figure(test, out, args.top_k, args.scheme)
    results["seconds"] = time.perf_counter() - begin
    results = ce.strip(results)
    report.write_json(out / "results.json", results)
    (out / "results.md").write_text(markdown(results))
    print(markdown(results))
    print(f"wrote {out / 'results.json'}, {out / 'results.md'}")
    return results


# Each curve keeps its colour when another is left out (a row without pairs has none).
_COLOURS = {"token": "C0", "predicted_spans": "C1", "top_spans": "C2"}


def _figure(test: dict, out: Path, k: int, scheme: str) -> str:
    """The thesis' layout: token and span queries overlaid in one panel, then one each."""
    s = test["spans"]
    rows = {
        "token": (
            f"token: {scheme.upper()} tag",
            f"token: {scheme.upper()} tags, Acc = {test['token_accuracy']:.3f}",
            test["token"],
        ),
        "predicted_spans": (
            "predicted spans",
            f"predicted (Viterbi) spans, P = {_score(s['precision'], 3)}, "
            f"R = {_score(s['recall'], 3)}",
            test["predicted_spans"],
        ),
        "top_spans": (
            f"top-{k} spans",
            f"top-{k} candidate spans per sentence",
            test[f"top{k}_spans"],
        ),
    }
    curves, missing = [], []
    for key, (label, caption, row) in rows.items():
        result = row["recommended"].get("_result")
        if result is None:
            missing.append(f"{label}: {not_computed(row['recommended']['not_computed'])}")
        else:
            curves.append(Curve(label, caption, result, _COLOURS[key]))
    path = thesis_figure(
        [(f"GUM entities ({scheme.upper()}), feature CRF", curves)],
        out / "ner_reliability.png",
        suptitle="GUM entities: bins of ⌈√N⌉, debiased CalibErr, sentence bootstrap"
        + "".join(f"\nno curve for {m}" for m in missing),
    )
    return Path(path).name  # relative to --out: an absolute path breaks when it moves


def _score(value: float | None, digits: int = 4) -> str:
    """A span score, or n/a where it is 0/0 (None: precision with no span predicted,
    recall with none gold, F1 with neither)."""
    return "n/a" if value is None else f"{value:.{digits}f}"


def _cells(r: dict) -> list:
    """A row's error [95%] and bins in each setting; where it has no pairs, why not."""
    cells = []
    for setting in ("paper", "recommended"):
        c = r[setting]
        if c["n"] == 0:
            cells += [not_computed(c["not_computed"]), "—"]
        else:
            cells += [report.format_interval(c["error"], c["lower"], c["upper"]), c["bins"]]
    return cells


def markdown(results: dict) -> str:
    """The calibration table and span scores of a results dict."""
    test = results["test"]
    k = results["top_k"]
    rows = []
    for key, label in (
        ("token", f"token: {results.get('scheme', 'bio').upper()} tag (one-vs-rest, all tags)"),
        ("predicted_spans", "span: predicted (Viterbi) spans"),
        (f"top{k}_spans", f"span: top-{k} candidates per sentence"),
    ):
        rows.append([label, test[key]["paper"]["n"], *_cells(test[key])])
    s = test["spans"]
    headers = ["query", "N", "CalibErr paper [95%]", "bins", "CalibErr recommended [95%]", "bins"]
    sentences = results["sentences"]
    dropped = sentences.get("dropped_unknown_tag", {})
    unseen = f"no training sentence tags {_flattened(results['max_length'])}"
    counts = {split: sentences[split] for split in dropped}  # not dropped_unknown_tag's dict
    note = ce.dropped_note(counts, dropped, what="an entity type", unseen=unseen)
    lines = [
        f"### GUM entities (test, {sentences['test']} sentences), feature CRF",
        "",
        *([note, ""] if note else []),
        report.markdown_table(headers, rows),
        "",
        ce.SETTINGS_LEGEND,
        "",
        f"Token accuracy {test['token_accuracy']:.4f}; spans: {s['predicted']} predicted "
        f"({s['predicted_too_long']} longer than --max-length {results['max_length']}: wrong, "
        "as no gold span is, and not queried), "
        f"{s['gold']} gold, precision {_score(s['precision'])}, recall {_score(s['recall'])}, "
        f"F1 {_score(s['f1'])}; expected correct among predicted "
        f"{s['expected_correct_predicted']:.1f} "
        f"(observed {round((s['precision'] or 0) * s['predicted'])}); expected gold spans "
        f"{s['expected_gold_spans']:.1f} (observed {s['gold']}).",
    ]
    return "\n".join(lines) + "\n"
