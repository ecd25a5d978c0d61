"""``CalibrationComparison.plot()``: both models' reliability diagrams side by side, titled
with the paired difference. Before, torchmetrics' bare ``NotImplementedError``."""

from __future__ import annotations

import warnings

import matplotlib
import pytest
import torch

from calib_metrics import CalibrationComparison

matplotlib.use("Agg")
G = torch.Generator().manual_seed(0)
Q = torch.rand(2000, generator=G, dtype=torch.float64)
Y = torch.bernoulli(Q, generator=G)
OVERCONFIDENT = torch.where(Q > 0.5, Q.sqrt(), Q**2)


def test_plot_draws_both_models_and_titles_the_difference() -> None:
    metric = CalibrationComparison(n_samples=200)
    metric.update(OVERCONFIDENT, Q, Y)
    fig, axes = metric.plot()
    assert [ax.get_title().splitlines()[0] for ax in axes] == ["a", "b"]
    assert "debiased pair bootstrap" in axes[0].get_title()
    title = fig.get_suptitle()
    assert title.startswith("a − b = +0.1") and "p < 0.01" in title
    other, _ = metric.plot(metric.compute())  # val= takes a result
    assert other.get_suptitle() == title


def test_plot_without_an_interval_says_so() -> None:
    metric = CalibrationComparison(n_samples=50)
    metric.update(Q[:5], OVERCONFIDENT[:5], Y[:5])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # fewer than 10 pairs: no interval
        fig, _ = metric.plot()
    assert "no interval" in fig.get_suptitle()


def _classwise(n_classes: int, n_items: int = 300) -> tuple[CalibrationComparison, torch.Tensor]:
    """A classwise comparison of an overconfident model a with a calibrated b."""
    probs = torch.softmax(2 * torch.randn(n_items, n_classes, generator=G), -1)
    target = torch.multinomial(probs, 1, generator=G).squeeze(1)
    sharper = torch.softmax(3 * probs.log(), -1)
    metric = CalibrationComparison(num_classes=n_classes, mode="classwise", n_samples=50)
    metric.update(sharper, probs, target)
    return metric, target


def test_a_classwise_comparison_draws_each_class_with_both_models() -> None:
    # Refused before ("pools every class's bins"), though the command line drew panels.
    from calib_metrics.functional.comparison import compare_with_classes

    metric, target = _classwise(3)
    fig, axes = metric.plot()
    # The classes' results of the draws behind compute()'s result: the functional's.
    probs_a, probs_b = (torch.cat(getattr(metric, name)) for name in ("probs_a", "probs_b"))
    _, classes_a, classes_b = compare_with_classes(
        probs_a, probs_b, target, mode="classwise", n_samples=50,
        generator=torch.Generator().manual_seed(0),
    )  # fmt: skip
    assert len(axes) == 3 and fig.get_suptitle().startswith("classwise: a − b = +0.")
    for c, (ax, a, b) in enumerate(zip(axes, classes_a, classes_b, strict=True)):
        heading, line_a, line_b = ax.get_title().splitlines()
        assert heading.startswith(f"class {c} · {int((target == c).sum()):,} positives")
        for line, name, r in ((line_a, "a", a), (line_b, "b", b)):
            ends = f"[{r.lower.item():.4f}, {r.upper.item():.4f}]"
            assert line == f"{name}: CalibErr {r.error.item():.4f} {ends}", line
    again, _ = metric.plot(metric.compute())  # val= takes compute()'s result
    assert again.get_suptitle() == fig.get_suptitle()


def test_a_classwise_comparison_draws_its_most_frequent_classes() -> None:
    metric, target = _classwise(14, n_items=1400)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # not compute_by_label's "no label can be called"
        fig, axes = metric.plot()
    counts = torch.bincount(target, minlength=14).tolist()
    kept = sorted(sorted(range(14), key=lambda c: (-counts[c], c))[:12])
    assert [ax.get_title().split(" · ")[0] for ax in axes] == [f"class {c}" for c in kept]
    assert "12 of 14 classes drawn" in fig.get_suptitle()


def test_plot_refuses_what_one_diagram_would_mislead_on() -> None:
    metric, target = _classwise(3)
    probs = torch.full((40, 3), 1 / 3)
    with pytest.raises(ValueError, match="val must be None or what compute"):
        metric.plot(metric(probs, probs, target[:40]))  # a batch's classes, not the state's
    metric = CalibrationComparison(n_samples=50)
    metric.update(OVERCONFIDENT, Q, Y)
    with pytest.raises(ValueError, match="ax"):
        metric.plot(ax=object())


def test_a_one_vs_rest_comparison_is_labelled_by_what_it_resampled() -> None:
    """Its items' pairs are resampled item by item: "pair bootstrap" would misname it."""
    probs = torch.softmax(2 * torch.randn(300, 3, generator=G), -1)
    target = torch.multinomial(probs, 1, generator=G).squeeze(1)
    metric = CalibrationComparison(num_classes=3, n_samples=50)
    metric.update(torch.softmax(3 * probs.log(), -1), probs, target)
    for val in (None, metric.compute(), metric(probs, probs, target)):  # forward's: a batch
        _, axes = metric.plot(val)
        assert "debiased item bootstrap" in axes[0].get_title()


def test_a_classwise_comparisons_panels_are_labelled_by_what_it_resampled() -> None:
    """Every draw gives an item one weight in every class's set: its panels had said "pair
    bootstrap", the command line's header "over pairs"."""
    metric, _ = _classwise(3)
    for val in (None, metric.compute()):
        fig, _ = metric.plot(val)
        texts = [t.get_text() for t in fig.findobj(matplotlib.text.Text)]
        assert any("debiased item bootstrap" in t for t in texts), texts
        assert not any("pair bootstrap" in t for t in texts)


def test_classwise_panels_are_the_classes_behind_the_result_drawn_without_computing() -> None:
    """The panels had come from compute_by_label(): the update's labels= in place of the
    classes, the items updated since a result (beside its title), and under DDP a
    collective that plot() on rank zero alone waited on for the process group's timeout."""
    metric, target = _classwise(3)
    probs = torch.softmax(torch.randn(300, 3, generator=G), -1)
    labelled = CalibrationComparison(num_classes=3, mode="classwise", n_samples=50)
    labelled.update(probs, probs, target, labels=torch.arange(300) % 2)
    _, axes = labelled.plot()
    assert [ax.get_title().split(" · ")[0] for ax in axes] == ["class 0", "class 1", "class 2"]
    result = metric.compute()
    metric.update(probs, probs, target)  # more items after the result
    metric.compute_by_label = metric.compute = None  # plot(result) computes nothing
    _, axes = metric.plot(result)
    positives = [int(ax.get_title().split(" · ")[1].split()[0].replace(",", "")) for ax in axes]
    assert positives == torch.bincount(target, minlength=3).tolist()


def test_a_classwise_comparison_pickled_before_its_classes_were_kept_still_plots() -> None:
    """A computed metric pickled before 2026-12-01 holds a result without its classes:
    plot() had raised IndexError (compute() answered from its cache)."""
    import pickle

    metric, _ = _classwise(3)
    result = metric.compute()
    metric.__dict__["_drawn"] = metric.__dict__["_drawn"][:2]  # as an older version kept it
    old = pickle.loads(pickle.dumps(metric))
    fig, axes = old.plot()
    assert len(axes) == 3 and fig.get_suptitle() == f"classwise: {metric._difference_text(result)}"


@pytest.mark.parametrize(
    ("num_classes", "mode"), [(None, "one_vs_rest"), (3, "one_vs_rest"), (3, "top_label")]
)
def test_plot_smooth_draws_each_models_smooth_curve_of_the_items_seen(num_classes, mode) -> None:
    """plot() had taken no smooth=: the curve and band existed for functions and the CLI."""
    from calib_metrics.functional import smooth_calibration_error

    if num_classes is None:
        a, b, target = OVERCONFIDENT, Q, Y
    else:
        b = torch.softmax(2 * torch.randn(600, 3, generator=G, dtype=torch.float64), -1)
        target = torch.multinomial(b, 1, generator=G).squeeze(1)
        a = torch.softmax(2 * b.log(), -1)
    metric = CalibrationComparison(num_classes=num_classes, mode=mode, n_samples=50)
    metric.update(a, b, target)
    _, axes = metric.plot(smooth=True)
    for ax, probs in zip(axes, (a, b), strict=True):
        (label,) = [
            t.get_text()
            for t in ax.get_legend().get_texts()
            if t.get_text().startswith("smooth curve")
        ]
        want = smooth_calibration_error(probs, target, mode=mode).item()
        assert label.startswith(f"smooth curve (smECE {want:.4f}")
    with pytest.raises(ValueError, match="smooth must be True or False"):
        metric.plot(smooth="yes")


def test_a_classwise_comparisons_panels_carry_each_models_smooth_curve_of_the_class() -> None:
    """plot(smooth=True) had been refused for the classwise panels (the command line drew
    them): each drawn class's panel carries both models' curves of that class's pairs,
    each model's draws from its own generator of the seed, class after class."""
    from calib_metrics.functional import smooth_reliability_curve

    metric, target = _classwise(14, n_items=700)
    metric.seed = 5
    sharper, probs = (torch.cat(state) for state in (metric.probs_a, metric.probs_b))
    _, axes = metric.plot(smooth=True)
    assert len(axes) == 12  # the classes drawn: curves made for those alone
    drawn = [int(ax.get_title().split(" · ")[0].split()[1]) for ax in axes]
    for model, color in ((sharper, "C0"), (probs, "C1")):
        generator = torch.Generator().manual_seed(5)
        for ax, c in zip(axes, drawn, strict=True):
            want = smooth_reliability_curve(
                model[:, c], target == c, n_samples=200, generator=generator
            )
            (line,) = [
                k for k in ax.get_lines() if k.get_label().endswith("smooth curve")
                and k.get_color() == color
            ]  # fmt: skip
            drawn_curve = torch.as_tensor(line.get_ydata(), dtype=want.curve.dtype)
            drawn_curve = drawn_curve[~drawn_curve.isnan()]  # broken off where no q lies
            assert len(drawn_curve) > 100
            assert torch.isclose(drawn_curve[:, None], want.curve[None]).any(1).all()
            # The band is the draws' (the curve is not): class after class from one generator.
            ends = torch.cat([want.lower, want.upper]).double()
            band = _band_edges(ax, line.get_color())
            assert torch.isclose(band[:, None], ends[None]).any(1).all()
            assert f"smECE {want.error.item():.4f}" in ax.get_title()


def test_smooth_curves_of_few_items_are_warned_of_as_items_once() -> None:
    """The curve's warning had said "5 groups" of one-vs-rest items (no groups given),
    twice, from the library's line."""
    probs = torch.softmax(torch.randn(5, 3, generator=G, dtype=torch.float64), -1)
    metric = CalibrationComparison(num_classes=3, n_samples=20)
    metric.update(probs, probs, torch.tensor([0, 1, 2, 0, 1]))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        metric.plot(smooth=True)
    said = [str(w.message) for w in caught if "5 items" in str(w.message)]
    assert len(said) == 1 and said[0].startswith("CalibrationComparison: ")
    assert not any("5 groups" in str(w.message) for w in caught)
    with pytest.raises(ValueError, match="leave val=None"):
        metric.plot(metric.compute(), smooth=True)
    one = CalibrationComparison(num_classes=3, n_samples=20)
    one.update(probs[:1], probs[:1], torch.tensor([0]))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        one.plot(smooth=True)
    assert any("1 item;" in str(w.message) for w in caught)  # not "1 group"
    assert not any(" group" in str(w.message) for w in caught)


def _band_edges(ax, color: str) -> torch.Tensor:
    """The y values of the band drawn in ``color`` on ``ax`` (its polygon's vertices)."""
    from matplotlib.colors import same_color

    bands = [c for c in ax.collections if c.get_label().endswith("band of the σ-smoothed curve")]
    (band,) = [c for c in bands if same_color(c.get_facecolor()[0][:3], color)]
    edges = [torch.as_tensor(path.vertices[:, 1]) for path in band.get_paths()]  # its runs
    return torch.cat(edges).double()


GROUPS = torch.arange(2000) // 4


def _labelled(metric: CalibrationComparison, val) -> list[str]:
    """The interval line of each model's diagram and the figure's title, plotting ``val``."""
    fig, axes = metric.plot(val)
    lines = [next(t for t in ax.get_title().splitlines() if "interval" in t) for ax in axes]
    return [*lines, fig.get_suptitle()]


@pytest.mark.parametrize(
    "grouped_first", [False, True], ids=["pairs_then_groups", "groups_then_pairs"]
)
def test_an_earlier_result_is_labelled_by_what_it_resampled(grouped_first) -> None:
    """The figure of an earlier result had named what the metric's state now would draw:
    a result over pairs, plotted once groups came, was refused ("interval='groups'
    contradicts result's interval"), though plot() had been given no interval."""
    metric = CalibrationComparison(n_samples=200)
    runs = [(None, "pair"), (GROUPS, "group")][:: -1 if grouped_first else 1]
    results = []
    for groups, _ in runs:
        metric.reset()
        metric.update(OVERCONFIDENT, Q, Y, groups=groups)
        results.append(metric.compute())
    (first, second), ((_, first_unit), (_, second_unit)) = results, runs
    *first_lines, title = _labelled(metric, first)
    assert all(
        f"95% interval: debiased {first_unit} bootstrap, percentile" in t for t in first_lines
    )
    assert title.startswith("a − b = +0.1") and "[95%: " in title
    now = _labelled(metric, None)  # what the state holds now: the second result
    assert all(f"debiased {second_unit} bootstrap" in t for t in now[:2])
    assert _labelled(metric, second) == now


def test_a_result_of_another_estimators_settings_is_refused_by_name() -> None:
    """Its level or debias is not this metric's, which its titles would name: the
    refusal had told the user to leave out a setting never given to plot()."""
    metric = CalibrationComparison(n_samples=50)
    metric.update(OVERCONFIDENT, Q, Y)
    for settings, name in (({"confidence": 0.9}, "confidence"), ({"debias": False}, "debias")):
        other = CalibrationComparison(n_samples=50, **settings)
        other.update(OVERCONFIDENT, Q, Y)
        with pytest.raises(ValueError, match=rf"val's intervals were computed with {name}="):
            metric.plot(other.compute())


def test_a_result_carrying_no_kind_names_none_unless_it_is_the_last_computed() -> None:
    """Made by hand, it had been labelled by what the state would draw now (a group
    bootstrap for a result over pairs): the state since need not be the one behind it."""
    from calib_metrics.functional import CalibrationResult

    metric = CalibrationComparison(n_samples=50)
    metric.update(OVERCONFIDENT, Q, Y)
    pairs = metric.compute()
    bare = pairs._replace(a=CalibrationResult(*pairs.a), b=CalibrationResult(*pairs.b))
    metric.reset()
    metric.update(OVERCONFIDENT, Q, Y, groups=GROUPS)
    grouped = metric.compute()
    for line in _labelled(metric, bare)[:2]:
        assert line.startswith("95% interval · ") and "bootstrap" not in line, line
    with pytest.raises(ValueError, match=r"val's two models carry different intervals \(a: 95%"):
        metric.plot(grouped._replace(b=pairs.b))  # put together by hand


@pytest.mark.parametrize("settings", [{"debias": False}, {}], ids=["plug_in", "default"])
@pytest.mark.parametrize("norm", ["l1", "max"])
def test_a_result_of_another_norm_is_refused_naming_the_norm(settings, norm) -> None:
    """An l1 result under an l2 metric of debias=False had been titled "CalibErr" (this
    metric's l2), not "CalibErr (l1)"; under a default metric it had been refused for
    its debias ("debias=False ... is True") when its norm was the difference."""
    metric = CalibrationComparison(n_samples=50, **settings)
    metric.update(OVERCONFIDENT, Q, Y)
    theirs = CalibrationComparison(n_samples=50, norm=norm)
    theirs.update(OVERCONFIDENT, Q, Y)
    result = theirs.compute()
    with pytest.raises(
        ValueError, match=f"computed with norm='{norm}', this metric's norm is 'l2'"
    ):
        metric.plot(result)
    _, axes = theirs.plot(result)  # its own metric names its norm
    assert all(ax.get_title().splitlines()[1].startswith(f"CalibErr ({norm}) ") for ax in axes)


def _without_draws(result):
    """``result`` as a version before 2026-12-02 saved it: its models carry their interval
    kind, not their norm nor their draws."""
    for model in (result.a, result.b):
        del model.norm, model.n_samples
    return result


def test_the_p_value_bound_is_that_of_the_results_own_draws() -> None:
    """A 20-draw result whose draws all lay on one side (p < 2/20) plotted by a
    100,000-draw metric had read "p < 2e-05", this metric's bound, not its own."""
    few = CalibrationComparison(n_samples=20)
    few.update(OVERCONFIDENT, Q, Y)
    result = few.compute()
    assert result.p_value.item() == 0
    many = CalibrationComparison(n_samples=100_000)
    many.update(OVERCONFIDENT, Q, Y)
    assert _labelled(many, result)[-1].endswith(", p < 0.1 (paired)")
    # One that carries no draws (saved before they were kept) has no bound named, unless
    # it is what this metric computed last: its draws are then this metric's. Its title
    # keeps a "p" (it had read "no draw crossed 0"), in p_value_phrase's verb, "reached".
    _without_draws(result)
    assert _labelled(many, result)[-1].endswith(", p < 2/S, no draw reached 0 (paired)")
    assert _labelled(few, result)[-1].endswith(", p < 0.1 (paired)")


def test_a_result_saved_before_norms_were_kept_still_plots(tmp_path) -> None:
    from calib_metrics import SAFE_GLOBALS

    metric = CalibrationComparison(n_samples=50)
    metric.update(OVERCONFIDENT, Q, Y)
    path = tmp_path / "result.pt"
    torch.save(_without_draws(metric.compute()), path)
    with torch.serialization.safe_globals(SAFE_GLOBALS):
        loaded = torch.load(path, weights_only=True)
    other = CalibrationComparison(n_samples=50)
    other.update(OVERCONFIDENT, Q, Y)
    assert "debiased pair bootstrap, percentile" in _labelled(other, loaded)[0]


def test_models_of_which_one_alone_carries_a_kind_or_of_two_forms_are_refused() -> None:
    """Kinds had been told apart by level, resampling and debias alone, and a kind that
    model a alone carried named b's interval too."""
    import copy

    from calib_metrics.functional import CalibrationResult

    metric = CalibrationComparison(n_samples=50)
    metric.update(OVERCONFIDENT, Q, Y)
    result = metric.compute()
    with pytest.raises(ValueError, match=r"different intervals \(a: 95% .*; b: none\)"):
        metric.plot(result._replace(b=CalibrationResult(*result.b)))
    normal = copy.copy(result.b)
    normal.kind = normal.kind._replace(method="normal")
    with pytest.raises(ValueError, match=r"different intervals \(a: .*, percentile; b: "):
        metric.plot(result._replace(b=normal))
