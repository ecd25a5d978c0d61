"""Probabilities, targets and group ids that torch cannot compute with as given are
refused by name at every public entry, as complex ones are: packed float4
(``float4_e2m1fn_x2``, a 1-byte float that the "float8 → float32" rule had taken, then
``NotImplementedError: "copy_kernel" not implemented``), sparse tensors (``RuntimeError:
reshape is not implemented for sparse tensors``) and nested ones. One shared check
(``binning.supported_dtype``, with ``errors.check_dense``) decides; for the layout it runs
first, in ``errors.check_tensors`` and ``check_id_tensor`` (the recalibrators' own
``check_tensor``), before any shape is read: a strided nested tensor had failed with
torch's "NestedTensorImpl doesn't support sizes" in ``is_multiclass``, a jagged one as a
shape mismatch that did not say "nested". The models and queries (the chain functions'
shared entry check, coref's scores check, ``left_align``, the queries' tensor check) run
``errors.check_dense_tensors`` before any shape is read too."""

from __future__ import annotations

import warnings

import pytest
import torch

from calib_metrics import CalibrationComparison, CalibrationError
from calib_metrics.functional import (
    adaptive_binning,
    brier_decomposition,
    calibration_error,
    calibration_error_ci,
    compare_calibration,
    compare_calibration_by_label,
    smooth_calibration_error,
    smooth_reliability_curve,
    spiegelhalter_test,
    uniform_binning,
)
from calib_metrics.models import left_align, linear_chain
from calib_metrics.models.coref import coreference_marginals, entity_roots, sample_antecedents
from calib_metrics.models.crf import CRFTagger
from calib_metrics.models.feature_crf import FeatureCRF
from calib_metrics.models.hmm import HMM
from calib_metrics.queries import coref_pair_queries, span_marginals, tag_queries
from calib_metrics.recalibration import (
    HistogramBinning,
    IsotonicCalibration,
    MatrixScaling,
    PlattScaling,
    ScalingBinning,
    TemperatureScaling,
    VectorScaling,
    compare_before_after,
    fit_binary,
)

G = torch.Generator().manual_seed(0)
Q = torch.rand(40, generator=G)
Y = torch.bernoulli(Q, generator=G).long()
IDS = torch.arange(40) // 4
PROBS = torch.softmax(torch.randn(40, 3, generator=G), -1)
LABELS = torch.randint(0, 3, (40,), generator=G)


def _float4(t: torch.Tensor) -> torch.Tensor:
    return torch.zeros(t.numel(), dtype=torch.uint8).view(torch.float4_e2m1fn_x2).view(t.shape)


def _updated(**options):
    def update(probs, target, groups=None):
        metric = CalibrationError(n_samples=20, **options)
        metric.update(probs, target, *(() if groups is None else (groups,)))

    return update


ENTRIES = {
    "adaptive_binning": lambda p, t, g=None: adaptive_binning(p, t, 10),
    "uniform_binning": lambda p, t, g=None: uniform_binning(p, t, 10),
    "calibration_error": lambda p, t, g=None: calibration_error(p, t),
    "calibration_error_ci": lambda p, t, g=None: calibration_error_ci(p, t, n_samples=20, groups=g),
    "compare_calibration": lambda p, t, g=None: compare_calibration(p, p, t, groups=g),
    "smooth_calibration_error": lambda p, t, g=None: smooth_calibration_error(p, t),
    "update": _updated(),
    "update, streaming": _updated(streaming=True, resolution=64),
    "forward": lambda p, t, g=None: CalibrationError(n_samples=20)(p, t),
}
TAKE_GROUPS = ("calibration_error_ci", "compare_calibration", "update")


def _cases():
    for entry in ENTRIES:
        for argument in ("probs", "target", "groups"):
            if argument != "groups" or entry in TAKE_GROUPS:
                yield entry, argument


@pytest.mark.parametrize("entry, argument", list(_cases()))
def test_a_sparse_tensor_is_refused_by_name(entry, argument) -> None:
    given = {"probs": Q, "target": Y, "groups": IDS}
    given[argument] = given[argument].to_sparse()
    name = "probs_a" if entry == "compare_calibration" and argument == "probs" else argument
    with pytest.raises(ValueError, match=rf"^{name} is a sparse_coo tensor: pass a dense tensor"):
        groups = given["groups"] if argument == "groups" else None
        ENTRIES[entry](given["probs"], given["target"], groups)


@pytest.mark.parametrize("entry", ENTRIES)
def test_packed_float4_probabilities_are_refused_by_name(entry) -> None:
    name = "probs_a" if entry == "compare_calibration" else "probs"
    with pytest.raises(ValueError, match=rf"^{name} has dtype torch.float4_e2m1fn_x2: pass"):
        ENTRIES[entry](_float4(Q), Y)


@pytest.mark.parametrize(
    "options",
    [{}, {"streaming": True, "resolution": 64}, {"mode": "top_label"}, {"mode": "classwise"}],
)
@pytest.mark.parametrize("odd", ["sparse", "float4"])
def test_multiclass_probabilities_are_refused_by_name(options, odd) -> None:
    probs = PROBS.to_sparse() if odd == "sparse" else _float4(PROBS)
    words = "is a sparse_coo tensor" if odd == "sparse" else "has dtype torch.float4_e2m1fn_x2"
    with pytest.raises(ValueError, match=f"^probs {words}"):
        CalibrationError(num_classes=3, **options).update(probs, LABELS)
    mode = options.get("mode", "one_vs_rest")
    with pytest.raises(ValueError, match=f"^probs {words}"):
        calibration_error(probs, LABELS, mode=mode)
    with pytest.raises(ValueError, match=r"^target is a sparse_coo tensor"):
        CalibrationError(num_classes=3, **options).update(PROBS, LABELS.to_sparse())


def test_float8_probabilities_are_still_measured() -> None:
    q = (Q * 4).round() / 4  # float8's values too
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # few bins
        expected = calibration_error(q, Y)
        assert torch.equal(calibration_error(q.to(torch.float8_e4m3fn), Y), expected)


def _sparse_probs_state() -> dict:
    source = CalibrationError(n_samples=20)
    source.persistent(True)
    source.update(Q, Y)
    state = source.state_dict()
    state["probs"] = [part.to_sparse() for part in state["probs"]]
    return state


@pytest.mark.parametrize("entry", ["merge_state", "load_state_dict"])
def test_sparse_states_are_refused_by_name_and_nothing_is_lost(entry) -> None:
    # torch's "reshape is not implemented for sparse tensors" had come out of both.
    metric = CalibrationError(n_samples=20)
    metric.update(Q, Y)
    before = metric.compute()
    state = _sparse_probs_state()
    with pytest.raises(ValueError, match="state 'probs' holds a sparse_coo tensor"):
        if entry == "merge_state":
            metric.merge_state({name: state[name] for name in ("probs", "target", "groups")})
        else:
            metric.load_state_dict(state)
    assert torch.equal(metric.compute(), before)


# --- Nested tensors, strided and jagged -----------------------------------------------

LAYOUTS = {"strided": torch.strided, "jagged": torch.jagged}


def _nested(t: torch.Tensor, layout: str) -> torch.Tensor:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's "prototype stage" warning
        return torch.nested.nested_tensor([t[:10], t[10:]], layout=LAYOUTS[layout])


def _compared(a, b, t, g=None, forward=False):
    metric = CalibrationComparison(n_samples=20)
    if forward:
        return metric(a, b, t)
    metric.update(a, b, t, *(() if g is None else (g,)))


# Entries beyond ENTRIES': each a call of the inputs ``d`` and, per input given nested, the
# name its error gives it.
LOGITS = torch.randn(40, 3, generator=G) * 2
CLASSES = torch.multinomial(torch.softmax(LOGITS, -1), 1, generator=G).squeeze(1)
DENSE = {"probs": Q, "target": Y, "groups": IDS, "labels": IDS % 3, "rows": PROBS}
DENSE |= {"classes": CLASSES, "logits": LOGITS, "scores": Q}
PAIRS = {"probs": "probs", "target": "target"}
MORE_ENTRIES = {
    "brier_decomposition": (lambda d: brier_decomposition(d["probs"], d["target"]), PAIRS),
    "spiegelhalter_test": (
        lambda d: spiegelhalter_test(d["probs"], d["target"], groups=d.get("groups")),
        PAIRS | {"groups": "groups"},
    ),
    "smooth_reliability_curve": (
        lambda d: smooth_reliability_curve(d["probs"], d["target"], groups=d.get("groups")),
        PAIRS | {"groups": "groups"},
    ),
    "compare_calibration_by_label": (
        lambda d: compare_calibration_by_label(d["probs"], Q, d["target"], d["labels"]),
        {"probs": "probs_a", "target": "target", "labels": "labels"},
    ),
    "CalibrationComparison.update": (
        lambda d: _compared(d["probs"], Q, d["target"], d.get("groups")),
        {"probs": "probs_a", "target": "target", "groups": "groups"},
    ),
    "CalibrationComparison.forward": (
        lambda d: _compared(Q, d["probs"], d["target"], forward=True),
        {"probs": "probs_b", "target": "target"},
    ),
    "CalibrationError(num_classes=3).update": (
        lambda d: CalibrationError(num_classes=3).update(d["rows"], d["classes"]),
        {"rows": "probs", "classes": "target"},
    ),
    "calibration_error, classwise": (
        lambda d: calibration_error(d["rows"], d["classes"], mode="classwise"),
        {"rows": "probs", "classes": "target"},
    ),
    "compare_before_after": (
        lambda d: compare_before_after(Q, d["probs"], d["target"], d.get("groups")),
        {"probs": "after", "target": "target", "groups": "groups"},
    ),
    "fit_binary": (lambda d: fit_binary("platt", d["probs"], d["target"]), PAIRS),
}
for _kind, _x in (
    (TemperatureScaling, "logits"),
    (VectorScaling, "logits"),
    (MatrixScaling, "logits"),
    (PlattScaling, "scores"),
    (IsotonicCalibration, "scores"),
    (HistogramBinning, "scores"),
    (ScalingBinning, "scores"),
):
    _y = "classes" if _x == "logits" else "target"
    MORE_ENTRIES[f"{_kind.__name__}.fit"] = (
        lambda d, kind=_kind, x=_x, y=_y: kind().fit(d[x], d[y]),
        {_x: _x, _y: "target"},  # PlattScaling's errors had said "logits" of its scores
    )
    _fitted = _kind().fit(DENSE[_x], DENSE[_y])
    MORE_ENTRIES[f"{_kind.__name__}.__call__"] = (
        lambda d, fitted=_fitted, x=_x: fitted(d[x]),
        {_x: _x},
    )


def _more_cases():
    for entry, (_, names) in MORE_ENTRIES.items():
        for argument in names:
            yield entry, argument


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("entry, argument", list(_cases()))
def test_a_nested_tensor_is_refused_by_name(entry, argument, layout) -> None:
    given = {"probs": Q, "target": Y, "groups": IDS}
    given[argument] = _nested(given[argument], layout)
    name = "probs_a" if entry == "compare_calibration" and argument == "probs" else argument
    with pytest.raises(ValueError, match=rf"^{name} is a nested tensor: pass a dense tensor"):
        groups = given["groups"] if argument == "groups" else None
        ENTRIES[entry](given["probs"], given["target"], groups)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("entry, argument", list(_more_cases()))
def test_a_nested_tensor_is_refused_by_name_at_every_other_entry(entry, argument, layout):
    call, names = MORE_ENTRIES[entry]
    given = {name: DENSE[name] for name in ("probs", "target", "labels", "rows", "classes")}
    given |= {"logits": LOGITS, "scores": Q, argument: _nested(DENSE[argument], layout)}
    with pytest.raises(ValueError, match=rf"^{names[argument]} is a nested tensor: pass a dense"):
        call(given)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize(
    "metric",
    [
        lambda: CalibrationError(n_samples=20),
        lambda: CalibrationError(n_samples=20, streaming=True, resolution=64),
        lambda: CalibrationComparison(n_samples=20),
    ],
    ids=["exact", "streaming", "comparison"],
)
def test_a_nested_batch_leaves_the_metric_as_it_was(metric, layout) -> None:
    m = metric()
    compared = isinstance(m, CalibrationComparison)
    m.update(*((Q, Q.sqrt(), Y) if compared else (Q, Y)))
    before = m.compute()
    for bad in ((_nested(Q, layout), Y), (Q, _nested(Y, layout))):
        batch = (bad[0], Q.sqrt(), bad[1]) if compared else bad
        for call in (m.update, m.forward):
            with pytest.raises(ValueError, match="is a nested tensor"):
                call(*batch)
    after = m.compute()
    if compared:
        assert torch.equal(after.difference, before.difference)
        assert torch.equal(after.a.error, before.a.error)
    else:
        assert torch.equal(after, before)


# The models' and queries' entries, each with the arguments whose layout is checked: the
# chain functions' shared entry check, coref's scores check, left_align's, the queries' and
# the taggers' (below).
_G = torch.Generator().manual_seed(0)
CHAIN = {
    "emissions": torch.randn(2, 4, 3, generator=_G),
    "transitions": torch.randn(3, 3, generator=_G),
    "start": torch.zeros(3),
    "end": torch.zeros(3),
    "mask": torch.ones(2, 4, dtype=torch.bool),
    "tags": torch.randint(0, 3, (2, 4), generator=_G),
    "unigram": torch.full((2, 4, 3), 1 / 3),
    "scores": torch.randn(2, 5, 5, generator=_G),
    "marginals": torch.full((2, 5, 5), 0.5),
    "entity_ids": torch.zeros(2, 5, dtype=torch.long),
    "antecedents": torch.zeros(2, 5, dtype=torch.long),
}
_CHAIN_ARGS = ("emissions", "transitions", "start", "end", "mask")
MODEL_ENTRIES = {
    "posterior_marginals": (
        lambda d: linear_chain.posterior_marginals(*(d[a] for a in _CHAIN_ARGS)),
        _CHAIN_ARGS,
    ),
    "viterbi": (lambda d: linear_chain.viterbi(*(d[a] for a in _CHAIN_ARGS)), ("emissions",)),
    "posterior_marginals(validate_args=False)": (
        lambda d: linear_chain.posterior_marginals(
            *(d[a] for a in _CHAIN_ARGS), validate_args=False
        ),
        ("emissions", "mask"),
    ),
    "sequence_score": (
        lambda d: linear_chain.sequence_score(*(d[a] for a in _CHAIN_ARGS[:4]), d["tags"]),
        ("tags",),
    ),
    "left_align": (
        lambda d: left_align(d["emissions"], d["tags"], mask=d["mask"]),
        ("emissions", "tags", "mask"),
    ),
    "tag_queries": (lambda d: tag_queries(d["unigram"], d["tags"]), ("unigram", "tags")),
    "span_marginals": (
        lambda d: span_marginals(*(d[a] for a in _CHAIN_ARGS[:4]), begin=0, inside=1, max_length=2),
        ("emissions",),
    ),
    "sample_antecedents": (lambda d: sample_antecedents(d["scores"], 2), ("scores",)),
    "coreference_marginals": (lambda d: coreference_marginals(d["scores"]), ("scores",)),
    "coref_pair_queries": (
        lambda d: coref_pair_queries(d["marginals"], d["entity_ids"]),
        ("marginals", "entity_ids"),
    ),
    "entity_roots": (lambda d: entity_roots(d["antecedents"]), ("antecedents",)),
}
CHAIN |= {
    "words": torch.randint(0, 5, (2, 4), generator=_G),
    "features": torch.randint(0, 8, (2, 4, 2), generator=_G),
}
# The taggers: words (features) go through check_words (check_features) at each method,
# whose shape reads had met a nested or sparse tensor first (torch's "NestedTensorImpl
# doesn't support sizes", "reshape is not implemented for sparse tensors").
TAGGERS = {  # each built anew, the input it reads, its fit's options (short and quiet)
    "HMM": (lambda: HMM(3, 5), "words", {}),
    "CRFTagger": (lambda: CRFTagger(3, 5), "words", {"max_iter": 1, "progress": False}),
    "FeatureCRF": (lambda: FeatureCRF(3, 8), "features", {"max_iter": 1}),
}
for _name, (_build, _x, _options) in TAGGERS.items():
    _tagged = (_x, "tags", "mask")
    _methods = {
        "fit": (
            lambda d, b=_build, x=_x, o=_options: b().fit(d[x], d["tags"], d["mask"], **o),
            _tagged,
        ),
        "marginals": (lambda d, b=_build, x=_x: b().marginals(d[x], d["mask"]), (_x, "mask")),
        "viterbi": (lambda d, b=_build, x=_x: b().viterbi(d[x], d["mask"]), (_x, "mask")),
        "sample": (
            lambda d, b=_build, x=_x: b().sample(d[x], d["mask"], n_samples=2),
            (_x, "mask"),
        ),
        "forward": (lambda d, b=_build, x=_x: b()(d[x], d["mask"]), (_x, "mask")),
        "potentials": (lambda d, b=_build, x=_x: b().potentials(d[x], d["mask"]), (_x, "mask")),
    }
    if _name == "HMM":
        _methods["log_likelihood"] = (
            lambda d, b=_build: b().log_likelihood(d["words"], d["mask"]),
            ("words", "mask"),
        )
    else:
        _methods["log_likelihood"] = (
            lambda d, b=_build, x=_x: b().log_likelihood(d[x], d["tags"], d["mask"]),
            _tagged,
        )
    if _name == "CRFTagger":
        _methods["negative_log_likelihood"] = (
            lambda d, b=_build: b().negative_log_likelihood(d["words"], d["tags"], d["mask"]),
            _tagged,
        )
    if _name == "FeatureCRF":
        _methods["objective"] = (
            lambda d, b=_build: b().objective(d["features"], d["tags"], d["mask"], 1.0),
            _tagged,
        )
    MODEL_ENTRIES |= {f"{_name}.{method}": entry for method, entry in _methods.items()}


def _layout(t: torch.Tensor, layout: str) -> torch.Tensor:
    if layout == "sparse":
        return t.to_sparse()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's "prototype stage" warning
        rows = [t[:1], t[1:]] if t.dim() == 1 else list(t)  # a 1-d tensor's: two runs
        return torch.nested.nested_tensor(rows, layout=LAYOUTS[layout])


@pytest.mark.parametrize("layout", [*LAYOUTS, "sparse"])
@pytest.mark.parametrize(
    "entry, argument", [(e, a) for e, (_, args) in MODEL_ENTRIES.items() for a in args]
)
def test_models_and_queries_refuse_a_nested_or_sparse_tensor_by_name(entry, argument, layout):
    call, _ = MODEL_ENTRIES[entry]
    given = dict(CHAIN) | {argument: _layout(CHAIN[argument], layout)}
    if layout == "sparse":
        expected = rf"^{argument} is a sparse_coo tensor: pass a dense tensor \({argument}\."
    else:
        expected = rf"^{argument} is a nested tensor: pass a dense tensor \(pad to one tensor"
    with pytest.raises(ValueError, match=expected):
        call(given)


@pytest.mark.parametrize("entry", [e for e in MODEL_ENTRIES if e.split(".")[0] in TAGGERS])
def test_the_taggers_entries_run_on_dense_inputs(entry):
    """Each tagger entry above is refused for its layout alone: on dense inputs it runs."""
    call, _ = MODEL_ENTRIES[entry]
    call(dict(CHAIN))
