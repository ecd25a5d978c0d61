"""torchmetrics' ``MetricCollection`` (``compute_groups=True``, its default) lets members
whose states are equal after the first update share one state, and from then on runs
only the first member's ``update``. These metrics keep padding rows (and, with
``validate_args=False``, unchecked rows) until compute, so two members that differed
only in ``ignore_index`` had equal states after a batch without padding: they were
grouped, and the member without ``ignore_index`` counted the other's padding targets
(-1, -100) as labels, where on its own it refuses the batch (binary: 0.3854 instead of
0.0801). Members whose ``update`` differs are now never grouped; members that differ
only in what ``compute`` does still share one state, each giving its own value."""

from __future__ import annotations

import copy
import pickle
import warnings

import pytest
import torch
from torchmetrics import MetricCollection

from calib_metrics import CalibrationComparison, CalibrationError

G = torch.Generator().manual_seed(0)
Q = torch.rand(400, generator=G, dtype=torch.float64)
Y = torch.bernoulli(Q, generator=G)
C = 3
P = torch.softmax(2 * torch.randn(600, C, generator=G, dtype=torch.float64), -1)
T = torch.multinomial(P, 1, generator=G).squeeze(1)


def _padded(target: torch.Tensor, pad: int) -> torch.Tensor:
    """The second half's first half marked as padding (the first half has none)."""
    n = target.numel()
    padded = target.clone()
    padded[n // 2 : 3 * n // 4] = pad
    return padded


# (probs, target, options of the member keeping padding, its padding value)
CASES = {
    "binary": (Q, Y, {"debias": False}, -1),
    "multiclass": (P, T, {"num_classes": C}, -100),
}


@pytest.mark.parametrize("case", CASES)
def test_a_member_without_ignore_index_refuses_padding_in_a_collection(case: str) -> None:
    probs, target, options, pad = CASES[case]
    target = _padded(target, pad)
    half = target.numel() // 2
    # Named so that the member with ignore_index comes first: it led the shared group.
    collection = MetricCollection(
        {
            "a_pad": CalibrationError(ignore_index=pad, **options),
            "b_plain": CalibrationError(**options),
        }
    )
    collection.update(probs[:half], target[:half])  # no padding: equal states
    assert collection.compute_groups == {0: ["a_pad"], 1: ["b_plain"]}
    with pytest.raises(ValueError, match=f"{pad}"):
        collection.update(probs[half:], target[half:])  # b_plain's own update refuses it
    plain = CalibrationError(**options)
    plain.update(probs[:half], target[:half])
    assert torch.equal(collection["b_plain"].compute(), plain.compute())


def test_comparisons_that_differ_in_ignore_index_are_not_grouped() -> None:
    target = _padded(Y, -1)
    collection = MetricCollection(
        {
            "a_pad": CalibrationComparison(ignore_index=-1, n_samples=50),
            "b_plain": CalibrationComparison(n_samples=50),
        }
    )
    collection.update(Q[:200], Q[:200].sqrt(), target[:200])
    assert collection.compute_groups == {0: ["a_pad"], 1: ["b_plain"]}
    with pytest.raises(ValueError, match="-1"):
        collection.update(Q[200:], Q[200:].sqrt(), target[200:])
    assert collection["b_plain"].compute().a.bins.count.sum() == 200


def test_a_checking_member_is_not_grouped_behind_one_that_does_not_check() -> None:
    collection = MetricCollection(
        {"a_unchecked": CalibrationError(validate_args=False), "b_checked": CalibrationError()}
    )
    collection.update(Q[:200], Y[:200])
    assert collection.compute_groups == {0: ["a_unchecked"], 1: ["b_checked"]}
    with pytest.raises(ValueError, match="probs"):
        collection.update(Q[200:] + 1, Y[200:])  # outside [0, 1]: b_checked refuses it


# Members that fill their states alike but read them otherwise: torchmetrics' speed-up.
SAME_UPDATE = {
    "binary": ({}, [{}, {"norm": "l1"}, {"debias": False}, {"bin_size": 50, "seed": 3}]),
    "multiclass": (
        {"num_classes": C},
        [{}, {"mode": "top_label"}, {"mode": "classwise"}, {"average": "none"}],
    ),
    "groups": ({"interval": None}, [{}, {"norm": "max"}, {"n_samples": 100}]),
}


@pytest.mark.parametrize("case", SAME_UPDATE)
def test_members_that_differ_only_at_compute_still_share_a_state(case: str) -> None:
    shared, variants = SAME_UPDATE[case]
    probs, target = (P, T) if "num_classes" in shared else (Q, Y)
    groups = torch.arange(target.numel()) // 10 if case == "groups" else None
    members = {f"m{i}": CalibrationError(**shared, **v) for i, v in enumerate(variants)}
    collection = MetricCollection(members)
    half = target.numel() // 2
    for part in (slice(None, half), slice(half, None)):
        extra = {} if groups is None else {"groups": groups[part]}
        collection.update(probs[part], target[part], **extra)
    assert collection.compute_groups == {0: list(members)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # few bins at bin_size=50
        values = collection.compute()
        for name, options in zip(members, variants, strict=True):
            alone = CalibrationError(**shared, **options)
            alone.update(probs, target, **({} if groups is None else {"groups": groups}))
            assert torch.equal(values[name], alone.compute()), name


@pytest.mark.parametrize(
    "options",
    [
        {"ignore_index": -1},
        {"validate_args": False},
        {"interval": "groups"},
        {"streaming": True, "resolution": 2**10},
    ],
)
def test_every_difference_of_update_keeps_members_apart(options: dict) -> None:
    groups = torch.arange(200) // 10
    collection = MetricCollection(
        {"a": CalibrationError(**options), "b": CalibrationError(interval=None)}
    )
    collection.update(Q[:200], Y[:200], groups=None if "streaming" in options else groups)
    assert collection.compute_groups == {0: ["a"], 1: ["b"]}


def test_the_states_keep_their_names_in_copies_and_state_dicts() -> None:
    metric = CalibrationError(ignore_index=-1)
    metric.update(Q, Y)
    copies = (copy.deepcopy(metric), pickle.loads(pickle.dumps(metric)), metric.clone().half())
    for other in copies:
        assert other._defaults.keys() == metric._defaults.keys()
        assert other._defaults.keys() != CalibrationError()._defaults.keys()
        assert torch.equal(other.compute(), metric.compute())
    metric.persistent(True)
    assert set(metric.state_dict()) == {"probs", "target", "groups", "_ignore_index", "_settings"}


def test_a_metric_pickled_before_the_rule_gets_it_when_loaded() -> None:
    metric = CalibrationError(ignore_index=-1)
    metric._defaults = dict(metric._defaults)  # as pickled before the states' rule
    loaded = pickle.loads(pickle.dumps(metric))
    assert loaded._defaults.keys() != CalibrationError()._defaults.keys()
    collection = MetricCollection({"pad": loaded, "plain": CalibrationError()})
    collection.update(Q[:200], Y[:200])
    assert collection.compute_groups == {0: ["pad"], 1: ["plain"]}


def test_a_collection_plots_each_member_from_its_own_state() -> None:
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    collection = MetricCollection(
        {"l2": CalibrationError(n_samples=50), "l1": CalibrationError(norm="l1", n_samples=50)}
    )
    collection.update(Q, Y)
    drawn = collection.plot()  # each member was refused compute()'s value
    assert len(drawn) == 2
    for fig, ax in drawn:
        assert "CalibErr" in ax.get_title() or ax.get_title()
        plt.close(fig)
    with pytest.raises(ValueError, match="compute_result"):
        CalibrationError().plot(torch.tensor(0.1))  # a value not its own still refused
