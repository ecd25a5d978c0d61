"""``calib-metrics recalibrate``: fit on dev, before/after on test, paired interval, output file."""

from __future__ import annotations

import csv
import json
import math

import pytest
import torch

from calib_metrics.cli import main
from calib_metrics.recalibration import PlattScaling, TemperatureScaling


def _write(path, n, seed, groups=False):
    g = torch.Generator().manual_seed(seed)
    s = torch.randn(n, generator=g, dtype=torch.float64)
    y = torch.bernoulli(torch.sigmoid(s), generator=g)
    q = torch.sigmoid(3 * s)  # overconfident
    with open(path, "w") as f:
        f.write("prob,label" + (",doc_id" if groups else "") + "\n")
        for i, (a, b) in enumerate(zip(q.tolist(), y.tolist())):
            f.write(f"{a!r},{int(b)}" + (f",d{i // 20}" if groups else "") + "\n")
    return q, y


@pytest.fixture
def files(tmp_path):
    dev, test = tmp_path / "dev.csv", tmp_path / "test.csv"
    return (dev, *_write(dev, 1500, 0)), (test, *_write(test, 2000, 1, groups=True))


def test_platt_before_after_and_written_probabilities(files, tmp_path, capsys):
    (dev, q_dev, y_dev), (test, q_test, _) = files
    out = tmp_path / "recal.csv"
    code = main(["recalibrate", str(dev), str(test), "--method", "platt", "--samples", "100",
                 "--out", str(out)])  # fmt: skip
    assert code == 0
    text = capsys.readouterr().out
    assert "before CalibErr" in text and "after  CalibErr" in text and "paired" in text
    with open(out) as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 2000
    written = torch.tensor([float(r["probs"]) for r in rows], dtype=torch.float64)
    expected = PlattScaling(inputs="probs").fit(q_dev, y_dev)(q_test)
    assert torch.allclose(written, expected, atol=1e-9)


def test_json_summary_shows_the_improvement_with_groups(files, tmp_path, capsys):
    (dev, q_dev, y_dev), (test, *_) = files
    code = main(["recalibrate", str(dev), str(test), "--method", "temperature", "--groups",
                 "--samples", "100", "--out", str(tmp_path / "o.csv"), "--json"])  # fmt: skip
    assert code == 0
    summary = json.loads(capsys.readouterr().out)
    fitted = TemperatureScaling(inputs="probs").fit(q_dev, y_dev).temperature.item()
    assert summary["temperature"] == pytest.approx(fitted, rel=1e-9)
    assert summary["temperature"] > 2  # the dev probabilities were made 3x overconfident
    d = summary["difference"]
    assert d["lower"] > 0  # recalibration helped, and the paired interval says so
    # No draw of 100 reached 0: the raw p of 0 is a bound, and the JSON says which.
    assert d["p_value"] == 0 and d["p_value_text"] == "< 0.02"
    assert d["difference"] == pytest.approx(
        summary["before"]["calib_err"] - summary["after"]["calib_err"], abs=1e-9
    )
    assert summary["before"]["accuracy"] == summary["after"]["accuracy"]
    assert summary["after"]["nll"] < summary["before"]["nll"]


@pytest.mark.parametrize("method", ["isotonic", "histogram"])
def test_binning_methods_run(files, tmp_path, method, capsys):
    (dev, *_), (test, *_) = files
    code = main(["recalibrate", str(dev), str(test), "--method", method, "--samples", "50",
                 "--out", str(tmp_path / "o.csv")])  # fmt: skip
    assert code == 0
    assert method in capsys.readouterr().out


def test_bad_inputs_are_one_line_errors(files, tmp_path, capsys):
    (dev, *_), (test, *_) = files
    single = tmp_path / "single.csv"
    single.write_text("prob,label\n0.2,0\n0.4,0\n")
    assert main(["recalibrate", str(single), str(test)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "single class" in err
    assert main(["recalibrate", str(dev), str(tmp_path / "missing.csv")]) == 2
    assert "no such file" in capsys.readouterr().err
    empty = tmp_path / "empty.csv"
    empty.write_text("prob,label\n")
    assert main(["recalibrate", str(empty), str(test)]) == 2
    assert capsys.readouterr().err.startswith("calib-metrics: error:")
    with pytest.raises(SystemExit) as exit_info:
        main(["recalibrate", str(dev), str(test), "--method", "magic"])
    assert exit_info.value.code == 2
    capsys.readouterr()
    # Before: "dev.csv: n_bins must ..." (blaming the file) for the binning methods, and
    # silently ignored for the others.
    for method in ("histogram", "temperature"):
        assert main(["recalibrate", str(dev), str(test), "--method", method, "--n-bins", "0"]) == 2
        assert capsys.readouterr().err == (
            "calib-metrics: error: --n-bins must be an integer in [1, 1048576], got 0\n"
        )


@pytest.mark.parametrize("method", ["temperature", "platt", "isotonic"])
def test_n_bins_is_refused_beside_a_method_without_bins(files, capsys, method):
    # It had been ignored without a word: the output was that of the default 15.
    (dev, _, _), (test, _, _) = files
    assert main(["recalibrate", str(dev), str(test), "--method", method, "--n-bins", "5"]) == 2
    assert capsys.readouterr().err == (
        "calib-metrics: error: --n-bins counts the bins of --method histogram or "
        f"scaling_binning; --method {method} has none\n"
    )


def test_cli_methods_are_the_library_methods():
    from calib_metrics.cli_recalibrate import METHODS
    from calib_metrics.recalibration import BINARY_METHODS

    assert METHODS == BINARY_METHODS


@pytest.mark.parametrize("option", ["--out", "--plot"])
def test_output_in_a_missing_folder_is_refused_and_not_created(files, tmp_path, capsys, option):
    (dev, *_), (test, *_) = files
    missing = tmp_path / "no" / "such"
    code = main(["recalibrate", str(dev), str(test), "--samples", "20",
                 option, str(missing / "x.png")])  # fmt: skip
    assert code == 2 and not (tmp_path / "no").exists()
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert option in line and "does not exist" in line


def test_plot_path_that_is_a_folder_is_refused(files, tmp_path, capsys):
    (dev, *_), (test, *_) = files
    code = main(["recalibrate", str(dev), str(test), "--samples", "20", "--plot", str(tmp_path)])
    assert code == 2
    assert "is a folder" in capsys.readouterr().err


def test_a_bad_test_file_is_named_in_the_error(files, tmp_path, capsys):
    (dev, *_), _ = files
    bad = tmp_path / "bad.csv"
    bad.write_text("prob,label\n0.2,0\n1.5,1\n0.7,1\n")
    code = main(["recalibrate", str(dev), str(bad), "--samples", "20"])
    assert code == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert str(bad) in line


@pytest.mark.parametrize("which", ["dev", "test"])
def test_a_multiclass_file_is_refused_as_such(files, tmp_path, capsys, which):
    # A multiclass .npz (probs [N, C], class ids [N]) is read as C probabilities per label;
    # recalibrate fits binary recalibrators, so it must say that, not report a shape of
    # N * C "logits" that the user never wrote.
    (dev, *_), (test, *_) = files
    g = torch.Generator().manual_seed(0)
    probs = torch.rand(300, 3, generator=g).softmax(-1).numpy()
    target = torch.randint(0, 3, (300,), generator=g).numpy()
    multi = tmp_path / "multi.npz"
    np = pytest.importorskip("numpy")
    np.savez(multi, probs=probs, target=target)
    args = [str(multi), str(test)] if which == "dev" else [str(dev), str(multi)]
    code = main(["recalibrate", *args, "--samples", "20", "--out", str(tmp_path / "o.csv")])
    assert code == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert str(multi) in line and "3 probabilities per label" in line and "binary" in line
    assert "TemperatureScaling" in line


def test_the_help_says_what_the_files_may_hold(capsys):
    """--target had offered "class ids beside C probabilities", which every file of them is
    refused for (above); --seed had no help at all."""
    with pytest.raises(SystemExit):
        main(["recalibrate", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "class ids" not in text and "0/1 label[, group]) pairs" in text
    assert "accuracy, NLL and Brier score before and after" in text  # Brier had gone unsaid
    assert "--target TARGET column (or array) of 0/1 labels, one per probability" in text
    assert "--seed SEED seed of the bootstrap draws and of scaling_binning's dev split" in text


def test_dev_and_test_files_may_name_their_columns_differently(files, tmp_path, capsys):
    """--probs/--target named one column for both files; --test-probs/--test-target name
    the test file's own."""
    (dev, *_), (test, *_) = files
    renamed = tmp_path / "dev_qy.csv"
    lines = dev.read_text().splitlines()
    renamed.write_text("\n".join(["q,y", *lines[1:]]) + "\n")
    argv = ["recalibrate", str(renamed), str(test), "--samples", "50", "--json"]
    argv += ["--probs", "q", "--target", "y", "--out", str(tmp_path / "o.csv")]
    assert main(argv) == 2 and "'q'" in capsys.readouterr().err
    assert main([*argv, "--test-probs", "prob", "--test-target", "label"]) == 0
    together = json.loads(capsys.readouterr().out)
    assert main(["recalibrate", str(dev), str(test), "--samples", "50", "--json",
                 "--out", str(tmp_path / "o2.csv")]) == 0  # fmt: skip
    assert json.loads(capsys.readouterr().out)["after"] == together["after"]


def test_the_test_files_columns_are_named_by_the_test_options(files, tmp_path, capsys):
    """The test file had been told to name its labels with --target, the dev file's option
    (and one --test-target falls back to); a column given by --target is still named so."""
    (dev, *_), (test, *_) = files
    argv = ["recalibrate", str(dev), str(test), "--test-probs", "label"]
    assert main([*argv, "--out", str(tmp_path / "o.csv")]) == 2
    err = capsys.readouterr().err
    assert "cannot tell which column holds the labels" in err
    assert err.rstrip().endswith("name it with --test-target")
    assert main([*argv, "--target", "label", "--out", str(tmp_path / "o.csv")]) == 2
    assert "column 'label' is given as --target and is" in capsys.readouterr().err


@pytest.mark.parametrize("grouped", [False, True])
def test_too_few_test_units_print_no_p_value(files, tmp_path, capsys, grouped):
    """Fewer than 10 resampling units: the text says so, as compare's does, and agrees with
    the JSON's null p_value_text (it printed "[+nan, +nan] paired, p = nan")."""
    (dev, *_), _ = files
    test = tmp_path / "small.csv"
    _write(test, 9 if not grouped else 180, 2, groups=grouped)  # 9 pairs, or 9 documents
    argv = ["recalibrate", str(dev), str(test), "--method", "platt", "--samples", "50"]
    argv += ["--out", str(tmp_path / "o.csv"), *(["--groups", "doc_id"] if grouped else [])]
    assert main(argv) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if "before - after" in x)
    units = "groups" if grouped else "pairs"
    assert line.endswith(f", no interval or p-value (fewer than 10 resampled {units})"), line
    assert "nan" not in line
    assert main([*argv, "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["difference"]["p_value"] is None
    assert summary["difference"]["p_value_text"] is None


def _recalibrate_small_test(files, tmp_path, capsys, n: int):
    """Run recalibrate on a test file of ``n`` pairs: its stdout and stderr."""
    (dev, *_), _ = files
    test = tmp_path / "small.csv"
    _write(test, n, 3)
    argv = ["recalibrate", str(dev), str(test), "--method", "platt", "--samples", "50"]
    assert main([*argv, "--out", str(tmp_path / "o.csv")]) == 0
    return capsys.readouterr(), test


def test_a_test_file_of_one_pair_is_counted_in_the_singular(files, tmp_path, capsys):
    """The header had said "1 pairs" (evaluate says "1 pair")."""
    (out, _), _ = _recalibrate_small_test(files, tmp_path, capsys, 1)
    lines = out.splitlines()
    assert lines[0].endswith(": 1500 pairs") and ": 1 pair;" in lines[1], lines[:2]


@pytest.mark.parametrize("groups", [False, True])
def test_the_header_names_the_intervals_kind(files, tmp_path, capsys, groups):
    """ "95% intervals" alone: evaluate's of the same file are normal, of 10,000 draws."""
    (dev, *_), (test, *_) = files
    argv = ["recalibrate", str(dev), str(test), "--samples", "50", "--out", str(tmp_path / "o.csv")]
    assert main([*argv, *(["--groups"] if groups else [])]) == 0
    header = capsys.readouterr().out.splitlines()[1]
    units = "groups" if groups else "pairs"
    said = f"95% percentile intervals of 50 bootstrap draws over {units} (the difference's paired)"
    assert header.endswith(said)


def test_testing_on_the_dev_pairs_warns(tmp_path, capsys):
    """'recalibrate dev.csv dev.csv' had reported a fitted map's gain on its own
    training pairs as an improvement with p < 0.001, silently."""
    import numpy as np

    from calib_metrics import cli

    g = np.random.default_rng(0)
    q = g.uniform(0.01, 0.99, 400)
    y = (g.uniform(size=400) < q**2).astype(int)
    path = tmp_path / "dev.csv"
    path.write_text("prob,label\n" + "".join(f"{a},{b}\n" for a, b in zip(q, y)))
    assert cli.main(["recalibrate", str(path), str(path), "--out", str(tmp_path / "o.csv")]) == 0
    assert "holds the dev pairs of" in capsys.readouterr().err


@pytest.mark.parametrize("order", ["reversed", "shuffled", "one label changed"])
def test_testing_on_the_dev_pairs_in_another_order_warns(tmp_path, capsys, order):
    """Only a same-order copy was caught: a reversed or shuffled one gave no word, and
    isotonic showed an 'after' error of 0.0000."""
    import numpy as np

    g = np.random.default_rng(0)
    q = g.uniform(0.01, 0.99, 400).round(2)  # ties, so the order within them counts too
    y = (g.uniform(size=400) < q**2).astype(int)
    dev, test = tmp_path / "dev.csv", tmp_path / "test.csv"
    dev.write_text("prob,label\n" + "".join(f"{a},{b}\n" for a, b in zip(q, y)))
    rows = {"reversed": np.arange(400)[::-1], "shuffled": g.permutation(400)}
    q_test, y_test = (q, y.copy()) if order not in rows else (q[rows[order]], y[rows[order]])
    if order == "one label changed":
        y_test[0] = 1 - y_test[0]
    test.write_text("prob,label\n" + "".join(f"{a},{b}\n" for a, b in zip(q_test, y_test)))
    argv = ["recalibrate", str(dev), str(test), "--method", "isotonic", "--samples", "20",
            "--out", str(tmp_path / "o.csv")]  # fmt: skip
    assert main(argv) == 0
    warned = "holds the dev pairs of" in capsys.readouterr().err
    assert warned == (order != "one label changed")


def test_the_before_and_after_panels_do_not_overlap(files, tmp_path, capsys, monkeypatch):
    """The left panel's right-hand count label ("pairs") had run into the right panel's
    y label: the figure had no layout."""
    from matplotlib.figure import Figure

    figures = []
    save = Figure.savefig

    def keep(self, *args, **kwargs):
        figures.append(self)
        return save(self, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", keep)
    (dev, *_), (test, *_) = files
    plot = tmp_path / "before_after.png"
    argv = ["recalibrate", str(dev), str(test), "--method", "temperature", "--samples", "50"]
    assert main([*argv, "--plot", str(plot)]) == 0
    (fig,) = figures
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig).draw()  # the layout as savefig drew it
    renderer = fig.canvas.get_renderer()
    labels = [ax.yaxis.label for ax in fig.axes if ax.yaxis.label.get_text()]
    counts_left = next(label for label in labels if label.get_text().startswith("pairs"))
    frequency_right = [label for label in labels if label.get_text().startswith("empirical")][1]
    left_end = counts_left.get_window_extent(renderer).x1
    assert left_end < frequency_right.get_window_extent(renderer).x0


def test_written_rows_are_the_test_rows_when_padding_is_dropped(files, tmp_path, capsys):
    """Row i of --out is the test file's data row i: a padding row keeps its place, with
    empty probabilities beside its label and group id (the padding rows had been left
    out, and every row after the first of them no longer lined up with the test file)."""
    (dev, *_), (test, *_) = files
    header, *rows = test.read_text().splitlines()
    padded = [r.replace(",1,", ",-100,").replace(",0,", ",-100,") if i % 3 == 0 else r
              for i, r in enumerate(rows)]  # fmt: skip
    test.write_text("\n".join([header, *padded]) + "\n")
    out = tmp_path / "out.csv"
    argv = [dev, test, "--groups", "doc_id", "--ignore-index", "-100", "--out", out]
    assert main(["recalibrate", *map(str, argv), "--samples", "20"]) == 0
    written = list(csv.DictReader(out.open()))
    source = [r.split(",") for r in padded]
    assert len(written) == len(source)
    # Each written row is its source row: the original probability, label and group id.
    assert [(w["original"], w["target"], w["group"]) for w in written] == [
        ("" if s[1] == "-100" else repr(float(s[0])), s[1], s[2]) for s in source
    ]
    assert all((w["probs"] == "") == (w["target"] == "-100") for w in written)


@pytest.mark.parametrize("method", ["platt", "scaling_binning"])
def test_dev_scores_that_are_all_equal_are_fitted_with_a_warning(files, tmp_path, method, capsys):
    """They were refused as separable ("every class-1 score lies at or above every class-0
    score ... slope grows without end"): slope 0 maps every score to the dev frequency."""
    (_, *_), (test, *_) = files
    dev = tmp_path / "equal.csv"
    dev.write_text("prob,label\n" + "".join(f"0.7,{int(i < 30)}\n" for i in range(100)))
    out = tmp_path / "o.csv"
    code = main(["recalibrate", str(dev), str(test), "--method", method, "--samples", "20",
                 "--out", str(out)])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 0 and "separable" not in err
    assert "are all equal, so they cannot set a slope: fitted slope 0" in err
    with open(out) as f:
        written = [float(row["probs"]) for row in csv.DictReader(f)]
    assert written == pytest.approx([0.3] * 2000)


@pytest.mark.parametrize(("grouped", "units"), [(False, "2,000 pairs"), (True, "100 groups")])
def test_a_long_run_is_announced_before_it_starts(files, tmp_path, capsys, monkeypatch,
                                                  grouped, units):  # fmt: skip
    """10⁶ pairs at the default 2,000 draws ran for minutes and printed nothing until done.
    The work counted is three bootstraps of the test units: the error before, after, and
    their paired difference."""
    from calib_metrics import cli
    from calib_metrics.functional import calibration_error_ci

    (dev, *_), (test, *_) = files
    argv = ["recalibrate", str(dev), str(test), "--samples", "20",
            "--out", str(tmp_path / "o.csv"), *(["--groups"] if grouped else [])]  # fmt: skip
    n_units = 100 if grouped else 2000
    monkeypatch.setattr(cli, "LONG_RUN_WEIGHTS", 3 * n_units * 20 + 1)
    assert main(argv) == 0
    assert "drawing" not in capsys.readouterr().err  # just under: no notice
    monkeypatch.setattr(cli, "LONG_RUN_WEIGHTS", 3 * n_units * 20)
    notices = []

    def bootstrap_after_notice(*args, **kwargs):
        notices.append(capsys.readouterr().err)  # what stderr held when the draws began
        return calibration_error_ci(*args, **kwargs)

    monkeypatch.setattr("calib_metrics.functional.calibration_error_ci", bootstrap_after_notice)
    assert main(argv) == 0
    notice = notices[0]
    assert f"drawing 20 resamples of {units}" in notice and "--samples" in notice
    assert "before, after and their paired difference" in notice
    assert notice[-1] == "\n" and notice.count("\n") == 1
    assert notices[1:] == [""]  # said once, before the first draws


def test_temperature_on_probabilities_all_one_half_keeps_t_at_one(tmp_path, files, capsys):
    """Dev probabilities all 0.5 do not depend on T: fitted at T = 1 with a warning (the
    command had exited 2, "no usable signal")."""
    (_, _, _), (test, _, _) = files
    dev = tmp_path / "half.csv"
    dev.write_text("prob,label\n" + "".join(f"0.5,{i % 2}\n" for i in range(40)))
    code = main(["recalibrate", str(dev), str(test), "--method", "temperature",
                 "--samples", "20", "--out", str(tmp_path / "o.csv")])  # fmt: skip
    assert code == 0
    assert "do not depend on T" in capsys.readouterr().err


def test_a_temperature_kept_at_one_is_no_improvement(tmp_path, files, capsys):
    """The identity (T = 1 kept on dev probabilities all 0.5) had been reported as
    "before - after +0.0000 [+0.0000, +0.0000] paired, p < 0.01": the map was one ulp off
    the test probabilities. It is the identity, and compare's p of a file with itself."""
    (_, _, _), (test, _, _) = files
    dev = tmp_path / "equal.csv"
    dev.write_text("probs,target\n0.5,0\n0.5,1\n0.5,1\n0.5,0\n0.5,1\n")
    out = tmp_path / "o.csv"
    code = main(["recalibrate", str(dev), str(test), "--method", "temperature",
                 "--samples", "200", "--out", str(out), "--json"])  # fmt: skip
    assert code == 0
    d = json.loads(capsys.readouterr().out)["difference"]
    assert d["difference"] == 0.0 and d["p_value"] == 1.0
    assert d["lower"] == 0.0 and d["upper"] == 0.0
    with open(out) as f:
        assert all(row["probs"] == row["original"] for row in csv.DictReader(f))


def test_the_written_file_holds_the_test_probabilities_to_the_last_digit(files, tmp_path, capsys):
    """Ten digits had written 0.99999999998945 as 1 (350 ones where the test file held
    133), and the file's "before" NLL was 1.3152 where the report's was 1.3119."""
    (dev, q_dev, y_dev), (test, q_test, _) = files
    out = tmp_path / "recal.csv"
    code = main(["recalibrate", str(dev), str(test), "--method", "platt", "--samples", "50",
                 "--out", str(out)])  # fmt: skip
    assert code == 0
    with open(out) as f:
        rows = list(csv.DictReader(f))
    original = torch.tensor([float(r["original"]) for r in rows], dtype=torch.float64)
    assert torch.equal(original, q_test)
    written = torch.tensor([float(r["probs"]) for r in rows], dtype=torch.float64)
    assert torch.equal(written, PlattScaling(inputs="probs").fit(q_dev, y_dev)(q_test))


_KINDS = {
    "platt": "PlattScaling",
    "histogram": "HistogramBinning",
    "scaling_binning": "ScalingBinning",
    "isotonic": "IsotonicCalibration",
}


@pytest.mark.parametrize("method", list(_KINDS))
def test_dev_labels_coded_the_other_way_are_warned_about(files, tmp_path, capsys, method):
    """Platt, histogram and scaling binning fitted a map that inverts the model (accuracy
    0.73 → 0.26), silently, where the temperature refuses such scores; isotonic one that
    maps every test probability to one value (0.50), reported as an improvement. Each is
    warned of once."""
    (dev, q_dev, y_dev), (test, _, _) = files
    flipped = tmp_path / "flipped.csv"
    flipped.write_text(
        "prob,label\n"
        + "".join(f"{a!r},{int(1 - b)}\n" for a, b in zip(q_dev.tolist(), y_dev.tolist()))
    )
    code = main(["recalibrate", str(flipped), str(test), "--method", method, "--samples", "50",
                 "--out", str(tmp_path / "out.csv")])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 0, err
    (said,) = [line for line in err.splitlines() if _KINDS[method] in line]
    assert said.startswith(f"calib-metrics: warning: {_KINDS[method]}: ")
    outcome = "the model's ranking is lost" if method == "isotonic" else "inverts the model"
    assert outcome in said and "check that the dev scores are the model's" in said
    main(["recalibrate", str(dev), str(test), "--method", method, "--samples", "50",
          "--out", str(tmp_path / "out.csv")])  # fmt: skip
    assert "check that the dev scores" not in capsys.readouterr().err


def test_isotonic_on_separable_dev_labels_is_warned_of(files, tmp_path, capsys):
    """Isotonic regression of dev labels the probabilities separate maps them to exactly 0
    and 1: the command had exited 0 in silence, with the test NLL taken from 0.755 to 8.04
    (Platt and the temperature refuse such a dev set)."""
    (_, q_dev, _), (test, _, _) = files
    separable = tmp_path / "separable.csv"
    separable.write_text(
        "prob,label\n" + "".join(f"{a!r},{int(a > 0.5)}\n" for a in q_dev[:100].tolist())
    )
    code = main(["recalibrate", str(separable), str(test), "--method", "isotonic",
                 "--samples", "50", "--out", str(tmp_path / "out.csv")])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 0, err
    (said,) = [line for line in err.splitlines() if "IsotonicCalibration" in line]
    assert said.startswith("calib-metrics: warning: IsotonicCalibration: the dev labels are ")
    assert "separable" in said and "exactly 0 or 1 at 100 of the 100 dev probabilities" in said


def test_weak_but_calibrated_scores_are_not_told_they_invert() -> None:
    """Review R4: the positives' mean below the negatives' had been the rule, and a weak,
    calibrated model's dev set (scores in [0.45, 0.55]) was told its histogram map
    inverts one time in three at n = 50; and scores whose Platt map rises (slope +0.14)
    had been told it falls. A Platt map is told when its slope is below 0, a histogram's
    when the labels run against the scores (a rank test's z below -3)."""
    import warnings

    from calib_metrics.recalibration import fit_binary

    g = torch.Generator().manual_seed(0)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*inverts the model")
        warnings.filterwarnings("ignore", message=".*(bin|dev pairs).*")
        for _ in range(20):
            q = 0.45 + 0.1 * torch.rand(50, generator=g, dtype=torch.float64)
            fit_binary("histogram", q, torch.bernoulli(q, generator=g))
        q = torch.tensor([0.001] * 50 + [0.95] * 50 + [0.45] * 100, dtype=torch.float64)
        y = torch.tensor([0.0] * 100 + [1.0] * 100, dtype=torch.float64)
        assert float(fit_binary("platt", q, y).slope) > 0


def test_a_test_file_of_few_bins_is_warned_of_as_evaluate_warns(files, tmp_path, capsys):
    """recalibrate alone had printed before/after errors of 6 bins without a word."""
    (_, err), test = _recalibrate_small_test(files, tmp_path, capsys, 50)
    assert "warning: only 6 bins from 50 pairs (auto bins)" in err
    assert main(["evaluate", str(test), "--samples", "50"]) == 0
    assert "warning: only 6 bins from 50 pairs (auto bins)" in capsys.readouterr().err


def test_compare_before_after_warns_at_its_callers_line():
    """Its warnings had pointed into calib_metrics/recalibration/compare.py."""
    import warnings

    from calib_metrics.recalibration import compare_before_after

    q = torch.tensor([0.4, 0.3, 0.9], dtype=torch.float64)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compare_before_after(q, q * 0.9, torch.tensor([1.0, 0.0, 1.0]))
    units = [w for w in caught if "resampling unit" in str(w.message)]
    assert units and all(w.filename == __file__ for w in units)
    assert str(units[0].message).startswith("compare_before_after: 3 resampling units")


def test_settings_name_the_columns_each_file_read(files, tmp_path, capsys) -> None:
    """The probability and label columns found by name had been null in the settings."""
    (dev, *_), (test, *_) = files
    argv = ["recalibrate", dev, test, "--samples", "50", "--out", tmp_path / "o.csv", "--json"]
    assert main([str(a) for a in argv]) == 0
    settings = json.loads(capsys.readouterr().out)["settings"]
    assert (settings["probs"], settings["target"]) == (
        "prob (found by name)",
        "label (found by name)",
    )
    assert main([str(a) for a in [*argv, "--test-probs", "prob"]]) == 0
    settings = json.loads(capsys.readouterr().out)["settings"]
    assert (settings["probs"], settings["test_probs"]) == ("prob (found by name)", "prob")


def test_plot_draws_before_and_after_on_one_x_axis(tmp_path, monkeypatch):
    """Overconfident scores piled near 0 and 1 drew "before" on a logit axis beside a
    linear "after": their shapes and count bars read unlike. Both take one scale."""
    from matplotlib.figure import Figure

    from calib_metrics.plot._counts import DIAGONAL

    figures = []
    save = Figure.savefig
    monkeypatch.setattr(Figure, "savefig", lambda f, *a, **k: figures.append(f) or save(f, *a, **k))
    files = []
    for name, seed in (("dev", 0), ("test", 1)):
        g = torch.Generator().manual_seed(seed)
        s = torch.randn(2000, generator=g, dtype=torch.float64)
        y = torch.bernoulli(torch.sigmoid(s), generator=g)
        rows = [f"{q!r},{int(b)}" for q, b in zip(torch.sigmoid(8 * s).tolist(), y.tolist())]
        path = tmp_path / f"{name}.csv"
        path.write_text("prob,label\n" + "\n".join(rows) + "\n")  # 71% within 0.05 of 0, 1
        files.append(str(path))
    plot = tmp_path / "before_after.png"
    argv = ["recalibrate", *files, "--method", "temperature", "--samples", "20"]
    assert main([*argv, "--plot", str(plot)]) == 0
    (fig,) = figures
    diagrams = [ax for ax in fig.axes if any(line.get_gid() == DIAGONAL for line in ax.lines)]
    assert [ax.get_xscale() for ax in diagrams] == ["logit", "logit"]
    # And one range, as their title says: each had its own, 1e-6 and 1e-4 from the ends.
    assert diagrams[0].get_xlim() == diagrams[1].get_xlim()


def test_a_label_given_probability_0_makes_the_nll_infinite(files, tmp_path, capsys):
    """The NLL had clamped probabilities to [1e-12, 1 - 1e-12], so a model that ruled out
    an observed label scored a finite NLL (about 27.6 / N for that pair) and nothing said
    so. Log loss is infinite there; the JSON (no inf in JSON) holds null and the count."""
    (dev, *_), (_, q, y) = files
    test = tmp_path / "ruled_out.csv"
    rows = [(0.0, 1), (1.0, 1), (0.0, 0), *zip(q[:200].tolist(), y[:200].long().tolist())]
    test.write_text("prob,label\n" + "".join(f"{a!r},{b}\n" for a, b in rows))
    argv = ["recalibrate", str(dev), str(test), "--samples", "20", "--out",
            str(tmp_path / "o.csv")]  # fmt: skip
    assert main([*argv, "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["before"]["nll"] is None
    assert summary["before"]["labels_at_probability_0"] == 1
    # The temperature maps 0 inside (0, 1): after, every label has a probability.
    assert summary["after"]["labels_at_probability_0"] == 0
    assert 0 < summary["after"]["nll"] < float("inf")
    assert main(argv) == 0
    before = next(
        line for line in capsys.readouterr().out.splitlines() if "before CalibErr" in line
    )
    assert "NLL inf (1 label at probability 0)" in before


def test_certain_and_right_pairs_add_nothing_to_the_nll(files, tmp_path, capsys):
    """0 * log 0 is 0: a probability of 1 on the observed label (or 0 on the other) costs
    nothing, and the NLL is the mean over all pairs of the others' log losses."""
    (dev, *_), (_, q, y) = files
    q, y = q[:200].tolist(), y[:200].long().tolist()
    test = tmp_path / "certain.csv"
    rows = [(1.0, 1), (0.0, 0), *zip(q, y)]
    test.write_text("prob,label\n" + "".join(f"{a!r},{b}\n" for a, b in rows))
    assert main(["recalibrate", str(dev), str(test), "--samples", "20", "--json",
                 "--out", str(tmp_path / "o.csv")]) == 0  # fmt: skip
    summary = json.loads(capsys.readouterr().out)
    losses = [-math.log(a if b else 1 - a) for a, b in zip(q, y)]
    assert summary["before"]["nll"] == pytest.approx(sum(losses) / len(rows), rel=1e-12)
    assert summary["before"]["labels_at_probability_0"] == 0
