"""``--recalibrate`` of the reproductions: fit on dev, measure on test, paired interval.

One row per (model, method): test CalibErr before -> after (debiased, ``bin_size="auto"``,
the interval of each by the bootstrap over pairs or sentences), the paired interval of
the difference before - after (one resampling shared by both;
:func:`~calib_metrics.recalibration.compare_before_after`), accuracy before / after and NLL
before -> after; and a figure of the reliability diagrams before and after.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from calib_metrics.functional import calibration_error_ci
from calib_metrics.paper import paired, report
from calib_metrics.predictions import save_figure
from calib_metrics.recalibration import ChainTemperature, compare_before_after, fit_binary
from calib_metrics.report import p_value_text

# Paired draws of the structured reproductions' intervals (groups: sentences, documents).
N_SAMPLES = 2000

HEADERS = ("model", "method", "fitted", "test CalibErr before → after", "before − after [95%]",
           "p", "accuracy before / after", "NLL before → after")  # fmt: skip


def _result(q: Tensor, y: Tensor, groups: Tensor | None, n_samples: int, seed: int):
    return calibration_error_ci(
        q, y, bin_size="auto", debias=True, n_samples=n_samples, method="percentile",
        interval="pairs" if groups is None else "groups", groups=groups,
        generator=torch.Generator().manual_seed(seed),
    )  # fmt: skip


def binary_nll(q: Tensor, y: Tensor) -> float:
    """Mean negative log-likelihood of 0/1 ``y`` under probabilities ``q`` (clamped)."""
    q = q.to(torch.float64).clamp(1e-12, 1 - 1e-12)
    y = y.to(torch.float64)
    return float(-(y * q.log() + (1 - y) * (1 - q).log()).mean())


def row(
    model: str,
    method: str,
    fitted: str,
    before: Tensor,
    after: Tensor,
    target: Tensor,
    *,
    groups: Tensor | None = None,
    units: str = "sentences",
    accuracy: tuple[float, float],
    nll: tuple[float, float],
    n_samples: int,
    seed: int,
) -> tuple[dict[str, Any], tuple[Any, Any]]:
    """One table row (a dict) and the before/after results (for the diagrams); ``units``
    names what ``groups`` are."""
    res_before = _result(before, target, groups, n_samples, seed)
    res_after = _result(after, target, groups, n_samples, seed + 1)
    diff = compare_before_after(
        before, after, target, groups, confidence=0.95, n_samples=n_samples,
        generator=torch.Generator().manual_seed(seed + 2),
    )  # fmt: skip
    record = {
        "model": model,
        "method": method,
        "fitted": fitted,
        "before": {k: float(getattr(res_before, k)) for k in ("error", "lower", "upper")},
        "after": {k: float(getattr(res_after, k)) for k in ("error", "lower", "upper")},
        "difference": diff,
        "accuracy": list(accuracy),
        "nll": list(nll),
        "interval_over": "pairs" if groups is None else units,
    }
    return record, (res_before, res_after)


def markdown(rows: list[dict[str, Any]]) -> str:
    """The table of the docs: one line per (model, method)."""
    lines = []
    for r in rows:
        b, a, d, units = r["before"], r["after"], r["difference"], r["interval_over"]
        lines.append([
            r["model"], r["method"], r["fitted"],
            f"{report.format_interval(b['error'], b['lower'], b['upper'], units=units)} → "
            f"{report.format_interval(a['error'], a['lower'], a['upper'], units=units)}",
            paired.format_difference(d, units),
            "—" if d["p_value"] != d["p_value"] else p_value_text(d["p_value"], d["n_samples"]),
            "—" if r["accuracy"][0] != r["accuracy"][0] else
            f"{r['accuracy'][0]:.4f} / {r['accuracy'][1]:.4f}",
            f"{r['nll'][0]:.4f} → {r['nll'][1]:.4f}",
        ])  # fmt: skip
    return report.markdown_table(HEADERS, lines)


def figure(curves: dict[str, tuple[Any, Any]], path: Path, interval: str = "pairs") -> str:
    """Reliability diagrams before (top) and after (bottom), one column per row, all on
    one x axis (:func:`~calib_metrics.plot.shared_x_axis`); ``interval`` is ``"groups"``
    when the rows were given groups (see :func:`row`)."""
    from matplotlib.figure import Figure

    from calib_metrics.plot import reliability_diagram, shared_x_axis

    fig = Figure(figsize=(4.6 * len(curves), 9.2), layout="constrained")
    axes = fig.subplots(2, len(curves), squeeze=False)
    # A "before" piled at the ends had gone logit beside a linear "after".
    shared = shared_x_axis([result for pair in curves.values() for result in pair])
    kind = {"interval": interval, "debias": True}  # as _result() draws it
    kind |= {"xscale": shared.xscale, "logit_range": shared.logit_range}
    for col, (name, (before, after)) in enumerate(curves.items()):
        for row, (which, result) in enumerate((("before", before), ("after", after))):
            title = shared.title(f"{name}: {which}", 2 * col + row)
            reliability_diagram(result, ax=axes[row, col], title=title, **kind)
    path.parent.mkdir(parents=True, exist_ok=True)
    save_figure(fig, path, "--out", dpi=90)
    return path.name  # relative to --out: an absolute path breaks when it moves


def binary_rows(
    model: str,
    dev: tuple[Tensor, Tensor],
    test: tuple[Tensor, Tensor],
    *,
    methods: tuple[str, ...] = ("platt", "isotonic"),
    n_samples: int = 1000,
    seed: int = 0,
) -> tuple[list[dict[str, Any]], dict[str, tuple[Any, Any]]]:
    """Rows for a binary classifier's dev/test probabilities, one per method."""
    rows, curves = [], {}
    q_test, y_test = test
    for i, method in enumerate(methods):
        recal = fit_binary(method, *dev, generator=torch.Generator().manual_seed(seed))
        after = recal(q_test).to(torch.float64).clamp(0, 1)
        record, curve = row(
            model, method, "dev NLL" if method == "platt" else "dev (isotonic LS)",
            q_test, after, y_test,
            accuracy=(_accuracy(q_test, y_test), _accuracy(after, y_test)),
            nll=(binary_nll(q_test, y_test), binary_nll(after, y_test)),
            n_samples=n_samples, seed=seed + 10 * i,
        )  # fmt: skip
        rows.append(record)
        curves[f"{model} {method}"] = curve
    return rows, curves


def _accuracy(q: Tensor, y: Tensor) -> float:
    return float(((q > 0.5).to(torch.float64) == y.to(torch.float64)).to(torch.float64).mean())


def _chain_queries(potentials, tags, mask, recal: ChainTemperature | None):
    """One-vs-rest tag queries ``(q, y)`` and each query's sentence, before or after."""
    from calib_metrics.models.linear_chain import posterior_marginals
    from calib_metrics.queries import tag_queries

    if recal is None:
        unigram = posterior_marginals(*potentials, mask, pairwise=False).unigram
    else:
        unigram = recal.marginals(*potentials, mask, pairwise=False).unigram
    q, y = tag_queries(unigram, tags, mask)
    sentence = torch.arange(mask.shape[0]).unsqueeze(1).expand_as(mask)[mask]
    return q.to(torch.float64), y, sentence.repeat(unigram.shape[-1])


def chain_rows(
    model_name: str,
    model: Any,
    dev: Any,
    test: Any,
    *,
    accuracy: float,
    n_samples: int = 200,
    seed: int = 0,
) -> tuple[list[dict[str, Any]], dict[str, tuple[Any, Any]]]:
    """Rows for a linear-chain tagger: one temperature fitted by the gold paths' likelihood,
    separate emission/transition temperatures, and one fitted by the dev debiased CalibErr.

    ``dev``/``test`` hold ``words``, ``tags``, ``mask``; ``model.potentials(words, mask)``
    gives the chain. Intervals resample whole test sentences.
    """
    with torch.no_grad():
        dev_pot = [p.detach().to(torch.float64) for p in model.potentials(dev.words, dev.mask)]
        test_pot = [p.detach().to(torch.float64) for p in model.potentials(test.words, test.mask)]
    q0, y0, sentence = _chain_queries(test_pot, test.tags, test.mask, None)
    rows, curves = [], {}
    variants = (("temperature", "dev gold-path NLL", {}),
                ("emission/transition T", "dev gold-path NLL", {"separate": True}),
                ("temperature", "dev debiased CalibErr", {"objective": "calib_err"}))  # fmt: skip
    for i, (method, fitted, options) in enumerate(variants):
        recal = ChainTemperature(**options).fit(*dev_pot, dev.tags, dev.mask)
        q1, _, _ = _chain_queries(test_pot, test.tags, test.mask, recal)
        nll = (_gold_nll(test_pot, test), recal.nll(*test_pot, test.tags, test.mask))
        accuracy_after = accuracy if not options.get("separate") else _viterbi_accuracy(
            recal.scale(*test_pot), test)  # fmt: skip
        temps = f"T = {recal.temperature.item():.3f}"
        if options.get("separate"):
            temps = f"T_em = {recal.temperature.item():.3f}, T_tr = " + (
                f"{recal.transition_temperature.item():.3f}")  # fmt: skip
        record, curve = row(
            model_name, f"{method} ({temps})", fitted, q0, q1, y0, groups=sentence,
            accuracy=(accuracy, accuracy_after), nll=nll, n_samples=n_samples,
            seed=seed + 10 * i,
        )  # fmt: skip
        record["nll_unit"] = "per token, gold tag sequences"
        rows.append(record)
        curves[f"{model_name} {method} ({fitted})"] = curve
    return rows, curves


def _gold_nll(potentials, split) -> float:
    """Per-token NLL of the gold tag sequences under the unscaled chain."""
    from calib_metrics.models.linear_chain import log_partition, sequence_score

    ll = sequence_score(*potentials, split.tags, split.mask) - log_partition(
        *potentials, split.mask
    )
    return float(-ll.sum() / split.mask.sum())


def _viterbi_accuracy(potentials, split) -> float:
    from calib_metrics.models.linear_chain import viterbi

    _, pred = viterbi(*potentials, split.mask)
    return float((pred == split.tags)[split.mask].to(torch.float64).mean())


def _gold_batch(model: Any, feats: list) -> Tensor:
    """Padded bool ``[B, N, N]`` gold antecedent options of a list of documents."""
    n = max(f.n for f in feats)
    gold = torch.zeros(len(feats), n, n, dtype=torch.bool)
    for b, f in enumerate(feats):
        gold[b, : f.n, : f.n] = model.gold_options(f).cpu()
    return gold


def _coref_queries(model: Any, feats: list, recal: Any | None):
    """Exact pairwise coreference queries ``(q, y)`` over documents, and their document."""
    from calib_metrics.models.coref import coreference_marginals
    from calib_metrics.queries import coref_pair_queries

    qs, ys, docs = [], [], []
    with torch.no_grad():
        for d, f in enumerate(feats):
            scores = model.score_document(f).detach().to(torch.float64)[None]
            marg = coreference_marginals(scores) if recal is None else recal.marginals(scores)
            q, y = coref_pair_queries(marg, f.entity[None].cpu())
            qs.append(q)
            ys.append(y)
            docs.append(torch.full((q.numel(),), d, dtype=torch.long))
    return torch.cat(qs), torch.cat(ys), torch.cat(docs)


def coref_report(model: Any, dev_feats: list, sets: dict, seed: int, out: Path) -> dict:
    """Score temperatures (with and without a NEW offset) fitted on dev, per test set."""
    from calib_metrics.recalibration import CorefTemperature

    with torch.no_grad():
        scores, mask = model.score_batch(dev_feats)
    scores, gold = scores.detach().to(torch.float64), _gold_batch(model, dev_feats)
    fitted = {
        "temperature": CorefTemperature().fit(scores, gold, mask),
        "temperature + NEW offset": CorefTemperature(new_offset=True).fit(scores, gold, mask),
    }
    rows, curves = [], {}
    for name, feats in sets.items():
        q0, y, docs = _coref_queries(model, feats, None)
        for i, (method, recal) in enumerate(fitted.items()):
            q1, _, _ = _coref_queries(model, feats, recal)
            label = f"{method} (T = {recal.temperature.item():.3f}" + (
                f", b = {recal.offset.item():+.3f})" if recal.new_offset else ")"
            )
            record, curve = row(
                f"ranker on {name}", label, "dev gold-antecedent likelihood", q0, q1, y,
                groups=docs, units="documents", accuracy=(float("nan"), float("nan")),
                nll=(binary_nll(q0, y), binary_nll(q1, y)), n_samples=N_SAMPLES, seed=seed + i,
            )  # fmt: skip
            record["nll_unit"] = "per pair query"
            rows.append(record)
            curves[f"{name} {method}"] = curve
    table = markdown(rows)
    print(table)
    path = out / "coref_recalibration.png"
    return {"rows": rows, "table": table, "figure": figure(curves, path, interval="groups")}
