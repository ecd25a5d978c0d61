"""The commands' text output says what the HTML report says: a control character in a
label or file name is written as its escape (an ESC had reached the terminal raw, and
misaligned the compare table), and an interval too few pairs could resample is "no
interval (fewer than 10 resampled pairs)", not "[nan, nan]"."""

from __future__ import annotations

import warnings
from pathlib import Path

import torch
from cli_runs import run_cli

from calib_metrics.functional import compare_calibration_by_label

NO_INTERVAL = "no interval (fewer than 10 resampled pairs)"
TINY = "prob,prob_b,label\n0.2,0.3,0\n0.3,0.2,1\n0.8,0.9,1\n"


def _labelled(path: Path, tags: list[str]) -> Path:
    g = torch.Generator().manual_seed(0)
    q = torch.rand(len(tags), generator=g, dtype=torch.float64)
    y = torch.bernoulli(q, generator=g).long().tolist()
    rows = [f"{a:.6f},{0.9 * a:.6f},{b},{t}" for a, b, t in zip(q.tolist(), y, tags)]
    path.write_text("prob,prob_b,label,tag\n" + "\n".join(rows) + "\n", encoding="utf-8")
    return path


TAGS = ["esc\x1b[31m"] * 150 + ["plain"] * 150


def test_evaluate_writes_controls_in_labels_and_file_names_as_escapes(tmp_path, capsys) -> None:
    path = _labelled(tmp_path / "d\x01.csv", TAGS)
    code, out, err = run_cli(capsys, "evaluate", path, "--label", "tag", "--samples", "20")
    assert code == 0, err
    assert "\x1b" not in out and "\x01" not in out
    assert "d\\x01.csv: N = 300 pairs" in out
    assert "  esc\\x1b[31m: CalibErr " in out


def test_compare_table_writes_controls_as_escapes_and_stays_aligned(tmp_path, capsys) -> None:
    path = _labelled(tmp_path / "d\x01.csv", TAGS)
    argv = ["compare", path, "--probs-b", "prob_b", "--label", "tag", "--samples", "20"]
    code, out, err = run_cli(capsys, *argv)
    assert code == 0, err
    assert "\x1b" not in out and "\x01" not in out
    assert "  a: " + str(path).replace("\x01", "\\x01") + ": " in out
    rows = [line for line in out.splitlines() if line.startswith(("  esc", "  plain"))]
    assert len(rows) == 2 and rows[0].startswith("  esc\\x1b[31m ")
    assert len(rows[0]) == len(rows[1])  # the columns line up


def test_evaluate_of_too_few_pairs_says_no_interval(tmp_path, capsys) -> None:
    path = tmp_path / "tiny.csv"
    path.write_text(TINY)
    code, out, err = run_cli(capsys, "evaluate", path, "--samples", "20")
    assert code == 0, err
    line = next(x for x in out.splitlines() if x.startswith("CalibErr"))
    assert "nan" not in line and line.endswith(NO_INTERVAL)


def test_compare_of_too_few_pairs_says_no_interval_for_each_model(tmp_path, capsys) -> None:
    path = tmp_path / "tiny.csv"
    path.write_text(TINY)
    code, out, err = run_cli(capsys, "compare", path, "--probs-b", "prob_b", "--samples", "20")
    assert code == 0, err
    models = [x for x in out.splitlines() if x.startswith(("  a: ", "  b: "))]
    assert len(models) == 2
    assert all("nan" not in x and x.endswith(f", {NO_INTERVAL}") for x in models)


def test_recalibrate_of_too_few_test_pairs_says_no_interval(tmp_path, capsys) -> None:
    dev = _labelled(tmp_path / "dev.csv", ["x"] * 200)
    test = tmp_path / "t\x01.csv"
    test.write_text(TINY)
    argv = ["recalibrate", dev, test, "--samples", "20", "--out", tmp_path / "o.csv"]
    code, out, err = run_cli(capsys, *argv)
    assert code == 0, err
    assert "\x01" not in out and "t\\x01.csv: 3 pairs" in out
    lines = [x for x in out.splitlines() if "CalibErr" in x and x.startswith("  ")]
    assert len(lines) == 2 and all("nan" not in x and NO_INTERVAL in x for x in lines)
    # In the interval's place, as the line with an interval lays it out (it had read
    # "CalibErr 0.0000, no interval (...),  accuracy").
    assert all(f"[{NO_INTERVAL}]  accuracy" in x for x in lines)


def test_one_tested_label_is_singular() -> None:
    g = torch.Generator().manual_seed(0)
    q = torch.rand(200, generator=g, dtype=torch.float64)
    y = torch.bernoulli(q, generator=g)
    labels = torch.zeros(200, dtype=torch.long)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compare_calibration_by_label(q, q.sqrt(), y, labels, n_samples=20, generator=g)
    (message,) = [str(w.message) for w in caught if "no label can be called" in str(w.message)]
    assert "holm over 1 label needs" in message


def test_several_tested_labels_stay_plural() -> None:
    labels = 3
    g = torch.Generator().manual_seed(0)
    q = torch.rand(600, generator=g, dtype=torch.float64)
    y = torch.bernoulli(q, generator=g)
    ids = torch.arange(600) % labels
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compare_calibration_by_label(q, q.sqrt(), y, ids, n_samples=20, generator=g)
    (message,) = [str(w.message) for w in caught if "no label can be called" in str(w.message)]
    assert f"holm over {labels} labels needs" in message


def test_every_command_prints_the_level_with_all_its_digits(tmp_path, capsys) -> None:
    # evaluate and recalibrate had printed `{:.0%}`: --confidence 0.999 as "100% interval",
    # 0.975 as "98%", while compare, the page and the figures said 99.9% and 97.5%.
    from calib_metrics.callbacks._tensorboard import bins_markdown
    from calib_metrics.functional import calibration_error_ci

    path = _labelled(tmp_path / "p.csv", ["t"] * 300)
    for level, shown in (("0.999", "99.9%"), ("0.975", "97.5%")):
        code, out, err = run_cli(capsys, "evaluate", path, "--samples", "20", "--confidence", level)
        assert code == 0 and f"  {shown} interval [" in out.splitlines()[1], (out, err)
        code, out, err = run_cli(
            capsys, "recalibrate", path, path, "--samples", "20", "--confidence", level,
            "--out", tmp_path / "r.csv",
        )  # fmt: skip
        header = out.splitlines()[1]
        assert code == 0 and f"auto bins, {shown} percentile intervals" in header, (out, err)
        code, out, err = run_cli(capsys, "compare", path, path, "--samples", "20", "--confidence",
                                 level)  # fmt: skip
        assert code == 0 and f"[{shown}: " in out.splitlines()[1], (out, err)
    q = torch.linspace(0.01, 0.99, 200, dtype=torch.float64)
    result = calibration_error_ci(q, (q > 0.5).double(), bin_size=50, n_samples=20)
    assert "99.9% interval" in bins_markdown(result, 0.999)
