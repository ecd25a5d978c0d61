"""The ``calib-metrics`` command: file round trips, JSON and plot output, bad files."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from calib_metrics import cli
from calib_metrics.functional import brier_decomposition, calibration_error_ci

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def pairs() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    q = rng.beta(0.5, 0.5, size=1500)
    y = (rng.random(1500) < np.clip(q + 0.05, 0, 1)).astype(np.int64)
    q[:20] = 0.25  # ties
    q[20], q[21] = 0.0, 1.0
    return q, y


# The paper's estimator, named on both sides so that neither default matters.
PAPER_CLI = ("--no-debias", "--interval", "paper")


def expected_numbers(q: np.ndarray, y: np.ndarray, **options) -> dict[str, float]:
    """The functional API's numbers for the paper's setting with the given options (seed 0)."""
    probs, target = torch.from_numpy(q), torch.from_numpy(y)
    bin_size = options.get("bin_size", 5000)
    samples = options.get("samples", 10000)
    result = calibration_error_ci(
        probs,
        target,
        bin_size=bin_size,
        n_samples=samples,
        generator=torch.Generator().manual_seed(0),
        debias=options.get("debias", False),
        interval=options.get("interval", "paper"),
    )
    brier = brier_decomposition(probs, target, bin_size=bin_size)
    return {
        "calib_err": result.error.item(),
        "mean": result.mean.item(),
        "std": result.std.item(),
        "lower": result.lower.item(),
        "upper": result.upper.item(),
        "brier": brier.brier.item(),
        "calibration": brier.calibration.item(),
        "refinement": brier.refinement.item(),
    }


def run_cli(capsys: pytest.CaptureFixture, *argv: str) -> tuple[int, str, str]:
    try:
        code = cli.main([str(a) for a in argv])
    except SystemExit as exit_:  # argparse usage errors
        code = exit_.code
    out, err = capsys.readouterr()
    return code, out, err


def write(path: Path, q: np.ndarray, y: np.ndarray) -> Path:
    """Write the pairs in the format that the suffix names."""
    suffix = path.suffix
    if suffix in (".csv", ".tsv"):
        sep = "," if suffix == ".csv" else "\t"
        lines = [f"id{sep}prob{sep}label"]
        lines += [
            f"{i}{sep}{float(a)!r}{sep}{int(b)}" for i, (a, b) in enumerate(zip(q, y, strict=True))
        ]
        path.write_text("\n".join(lines) + "\n")
    elif suffix == ".jsonl":
        rows = (json.dumps({"q": float(a), "y": int(b)}) for a, b in zip(q, y, strict=True))
        path.write_text("\n".join(rows) + "\n")
    elif suffix == ".npy":
        np.save(path, np.stack([q, y.astype(np.float64)], axis=1))
    elif suffix == ".npz":
        np.savez(path, probs=q, target=y)
    elif suffix == ".pt":
        torch.save({"probs": torch.from_numpy(q), "target": torch.from_numpy(y)}, path)
    return path


@pytest.mark.parametrize("suffix", [".csv", ".tsv", ".jsonl", ".npy", ".npz", ".pt"])
def test_round_trip_json(tmp_path: Path, capsys, pairs, suffix: str) -> None:
    q, y = pairs
    path = write(tmp_path / f"preds{suffix}", q, y)
    code, out, err = run_cli(
        capsys, "evaluate", path, "--json", "--bin-size", "200", "--samples", "300", *PAPER_CLI
    )
    assert code == 0, err
    summary = json.loads(out)
    assert summary["n"] == len(q)
    assert summary["bins"] == len(q) // 200
    for name, value in expected_numbers(q, y, bin_size=200, samples=300).items():
        assert summary[name] == pytest.approx(value, rel=1e-12, abs=1e-15), name


def test_text_output_and_plot(tmp_path: Path, capsys, pairs) -> None:
    q, y = pairs
    path = write(tmp_path / "preds.csv", q, y)
    png = tmp_path / "figs" / "diagram.png"
    png.parent.mkdir()  # --plot writes into an existing folder only
    code, out, err = run_cli(
        capsys,
        "evaluate",
        path,
        "--probs",
        "prob",
        "--target",
        "label",
        "--bin-size",
        "300",
        "--samples",
        "200",
        "--plot",
        png,
        *PAPER_CLI,
    )
    assert code == 0, err
    numbers = expected_numbers(q, y, bin_size=300, samples=200)
    assert f"N = {len(q)}" in out
    assert f"{numbers['calib_err']:.4f}" in out
    assert f"[{numbers['lower']:.4f}, {numbers['upper']:.4f}]" in out
    assert f"{numbers['brier']:.4f}" in out
    assert png.read_bytes()[:8] == PNG_MAGIC


def test_options_reach_the_computation(tmp_path: Path, capsys, pairs) -> None:
    q, y = pairs
    path = write(tmp_path / "preds.npz", q, y)
    code, out, _ = run_cli(
        capsys,
        "evaluate",
        path,
        "--json",
        "--binning",
        "uniform",
        "--n-bins",
        "10",
        "--norm",
        "l1",
        "--samples",
        "100",
        "--confidence",
        "0.9",
        "--method",
        "percentile",
        "--interval",
        "paper",
    )
    assert code == 0
    summary = json.loads(out)
    expected = calibration_error_ci(
        torch.from_numpy(q),
        torch.from_numpy(y),
        binning="uniform",
        n_bins=10,
        norm="l1",
        n_samples=100,
        confidence=0.9,
        method="percentile",
        generator=torch.Generator().manual_seed(0),
        debias=False,
        interval="paper",
    )
    assert summary["debias"] is False  # l1 has no debiased estimate: the plug-in
    assert summary["calib_err"] == pytest.approx(expected.error.item(), rel=1e-12)
    assert summary["upper"] == pytest.approx(expected.upper.item(), rel=1e-12)
    assert summary["bins"] == len(expected.bins.count)


BAD_FILES = {
    "missing": (None, "no such file"),
    "empty.csv": ("", "empty"),
    "header_only.csv": ("prob,label\n", "no rows"),
    "bad_value.csv": ("prob,label\n0.3,1\n1.7,0\n", r"\[0, 1\]"),
    "nonbinary.csv": ("prob,label\n0.3,1\n0.7,2\n", "binary"),
    "text.csv": ("prob,label\n0.3,1\nhigh,0\n", "non-numeric"),
    "ragged.csv": ("prob,label\n0.3,1\n0.7\n", "line 3"),
    "nan.tsv": ("prob\tlabel\n0.3\t1\nnan\t0\n", "NaN"),
    "broken.jsonl": ('{"q": 0.3, "y": 1}\n{"q": 0.5,\n', "JSON"),
    "broken.npy": ("not an array", "npy"),
    "broken.pt": ("not a tensor", "torch"),
    "preds.xlsx": ("a,b\n", "format"),
}


@pytest.mark.parametrize("name", list(BAD_FILES))
def test_bad_files_give_one_line_and_exit_2(tmp_path: Path, capsys, name: str) -> None:
    content, match = BAD_FILES[name]
    path = tmp_path / name
    if content is not None:
        path.write_text(content)
    code, out, err = run_cli(capsys, "evaluate", path, "--samples", "10")
    assert code == 2
    assert "Traceback" not in err and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert re.search(match, lines[0], flags=re.IGNORECASE), lines[0]


def test_bad_column_is_named(tmp_path: Path, capsys, pairs) -> None:
    path = write(tmp_path / "preds.csv", *pairs)
    code, _, err = run_cli(capsys, "evaluate", path, "--probs", "confidence_score")
    assert code == 2
    assert "confidence_score" in err and len(err.strip().splitlines()) == 1
    code, _, err = run_cli(
        capsys, "evaluate", write(tmp_path / "p.npz", *pairs), "--target", "gold"
    )
    assert code == 2 and "gold" in err


def test_bad_option_values(tmp_path: Path, capsys, pairs) -> None:
    path = write(tmp_path / "preds.csv", *pairs)
    for option, value in (("--bin-size", "0"), ("--samples", "1"), ("--confidence", "1.5")):
        code, _, err = run_cli(capsys, "evaluate", path, option, value)
        assert code == 2, option
        assert option.lstrip("-").replace("-", "_").split("_")[0] in err.replace("-", "_"), err
        assert "Traceback" not in err


def test_usage_error_exits_2(capsys) -> None:
    code, _, err = run_cli(capsys, "evaluate")
    assert code == 2 and "usage" in err.lower()


def test_module_entry_point_exit_code(tmp_path: Path) -> None:
    # The real process: exit status 2 and one line on stderr, no traceback.
    bad = tmp_path / "bad.csv"
    bad.write_text("prob,label\n0.3,1\n-0.5,0\n")
    done = subprocess.run(
        [sys.executable, "-m", "calib_metrics.cli", "evaluate", str(bad)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert "[0, 1]" in done.stderr


def test_demo_quick_writes_pngs(tmp_path: Path, capsys) -> None:
    out, img = tmp_path / "demo", tmp_path / "img"
    img.mkdir()
    code, _, err = run_cli(capsys, "demo", "--out", out, "--quick", "--img", img)
    assert code == 0, err
    # Steps and time spent, no rate or time left: tqdm's estimate from the demo's first,
    # heaviest steps had said 8-12 hours for a run of minutes.
    assert "steps [" in err and "so far]" in err
    assert not any(said in err for said in ("step/s", "s/step", "it/s", "<"))
    # Not a terminal: a line at the start and at every tenth (and any after a long step),
    # no bar redrawn with carriage returns.
    progress = [line for line in err.splitlines() if line.startswith("demo: ")]
    percents = [int(line.split("%")[0].removeprefix("demo:")) for line in progress]
    assert "\r" not in err and percents[0] == 0 and percents == sorted(percents)
    assert all(any(10 * k <= p < 10 * k + 10 for p in percents) for k in range(1, 11))
    pngs = sorted(out.glob("*.png"))
    assert pngs, f"no PNG in {list(out.iterdir())}"
    for png in pngs:
        assert png.read_bytes()[:8] == PNG_MAGIC
    # --img: the docs' copies, under the names docs/img gives them.
    copies = sorted(p.name for p in img.iterdir())
    assert copies == sorted(f"demo_{p.name}" for p in pngs)
    assert "demo_reliability.png" in copies
    for png in pngs:
        assert (img / f"demo_{png.name}").read_bytes() == png.read_bytes()


def test_demo_log_says_it_started_and_speaks_after_a_long_step(capsys) -> None:
    # A log had stayed empty for 9.5 minutes under load: the first steps are the heaviest
    # and the first line came only at the first tenth.
    from calib_metrics.paper.demo import _LogProgress

    now = [0.0]
    progress = _LogProgress(100, clock=lambda: now[0])
    for seconds in (1.0, 45.0, 1.0, 1.0):  # the second step takes 45 s
        now[0] += seconds
        progress.update()
    lines = capsys.readouterr().err.splitlines()
    assert lines == [
        "demo:   0% 0/100 steps [00:00 so far]",
        "demo:   2% 2/100 steps [00:46 so far]",
    ]


def test_demo_progress_bar_counts_the_estimator_study(tmp_path: Path, capsys, monkeypatch) -> None:
    # The estimator study ran after the bar had reached 100% (7 of the demo's 8.5 minutes
    # in a fresh clone, with nothing moving): the bar must count it.
    from calib_metrics.paper import demo, estimators

    class Bar:
        def __init__(self, total: int, **_) -> None:
            self.total, self.n = total, 0

        def update(self, n: int = 1) -> None:
            self.n += n

        def close(self) -> None:
            pass

    bars: list[Bar] = []
    monkeypatch.setattr(demo, "_progress", lambda **kw: bars.append(Bar(**kw)) or bars[-1])
    at_study: list[int] = []
    study = estimators.study

    def recording_study(*args, **kwargs):
        at_study.append(bars[0].n)
        return study(*args, **kwargs)

    monkeypatch.setattr(estimators, "study", recording_study)
    code, _, err = run_cli(capsys, "demo", "--out", tmp_path, "--quick")
    assert code == 0, err
    (bar,) = bars
    assert at_study and at_study[0] < bar.total
    assert bar.n == bar.total


def test_demo_refuses_a_missing_img_folder_before_running(tmp_path: Path, capsys) -> None:
    code, _, err = run_cli(capsys, "demo", "--out", tmp_path, "--quick", "--img", tmp_path / "no")
    assert code == 2
    assert err.strip().endswith("no: does not exist (make the folder first)")
    assert len(err.strip().splitlines()) == 1
    assert not list(tmp_path.glob("*.png"))


@pytest.mark.parametrize("option", ["--n", "--bin-size", "--samples"])
def test_demo_refuses_a_size_that_is_not_positive_before_running(
    tmp_path: Path, capsys, option: str
) -> None:
    """With --quick these were overwritten silently (0 ran as 20,000); without it --n 0
    failed only once the progress bar had started."""
    wanted = "at least 2" if option == "--samples" else "a positive integer"
    for quick in ([], ["--quick"]):
        code, _, err = run_cli(capsys, "demo", "--out", tmp_path / "d", *quick, option, "0")
        assert (
            code == 2 and err.strip() == f"calib-metrics: error: {option} must be {wanted}, got 0"
        )
        assert not (tmp_path / "d").exists()


def test_demo_quick_keeps_the_sizes_a_user_gives(monkeypatch) -> None:
    import argparse

    from calib_metrics.paper import demo

    args = argparse.Namespace(quick=True, n=5000, bin_size=None, samples=None)
    assert demo._sizes(args) == (5000, 1000, 500)
    args = argparse.Namespace(quick=False, n=None, bin_size=None, samples=300)
    assert demo._sizes(args) == (1_000_000, 5000, 300)
