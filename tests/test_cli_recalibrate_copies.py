"""``calib-metrics recalibrate``: a test file of many dev rows is warned of, an honest
split of a model of few distinct outputs is not."""

from __future__ import annotations

import re

import numpy as np
import pytest

from calib_metrics.cli import main


def _draw(n: int, seed: int, outputs: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(probability, label) pairs of a 3x overconfident model; with ``outputs``, a model
    of those few distinct probabilities."""
    g = np.random.default_rng(seed)
    s = g.normal(size=n)
    q = 1 / (1 + np.exp(-3 * s))
    if outputs is not None:
        q = outputs[np.minimum((q * len(outputs)).astype(int), len(outputs) - 1)]
    return q, (g.uniform(size=n) < 1 / (1 + np.exp(-s))).astype(int)


def _write(path, q, y):
    rows = zip(q.tolist(), y.tolist(), strict=True)
    path.write_text("prob,label\n" + "".join(f"{a!r},{b}\n" for a, b in rows))
    return path


def _said(tmp_path, capsys, dev, test) -> str:
    argv = ["recalibrate", str(_write(tmp_path / "dev.csv", *dev)),
            str(_write(tmp_path / "test.csv", *test)), "--method", "isotonic",
            "--samples", "20", "--out", str(tmp_path / "o.csv")]  # fmt: skip
    assert main(argv) == 0
    return capsys.readouterr().err


@pytest.mark.parametrize("copy", ["dev and one row", "a part of dev", "dev and 500 others"])
def test_a_test_file_of_many_dev_rows_is_warned_of(tmp_path, capsys, copy):
    """Only a test file of exactly the dev pairs was warned of: the dev file with one row
    more, a part of it, or with 500 other rows gave no word, and isotonic showed an
    'after' error of 0.0000 on pairs it was fitted to."""
    q, y = _draw(1000, 0)
    other_q, other_y = _draw(500, 1)
    test = {
        "dev and one row": (np.r_[q, other_q[:1]], np.r_[y, other_y[:1]]),
        "a part of dev": (q[::3], y[::3]),
        "dev and 500 others": (np.r_[other_q, q], np.r_[other_y, y]),
    }[copy]
    n = len(test[0])
    copied = min(n, 1000)
    share = copied * 100 // n
    said = _said(tmp_path, capsys, (q, y), test)
    assert f"{copied} of {n} test rows ({share}%) of " in said
    assert re.search(r"are also dev rows of .*, where chance would give about [01] \(", said)
    assert "'after' and the difference are optimistic" in said


def test_an_honest_split_of_a_model_of_few_outputs_is_not_warned_of(tmp_path, capsys):
    """Five distinct probabilities: every test row equals dev rows by chance, as often as
    dev rows equal one another, which is no copy."""
    outputs = np.array([0.1, 0.3, 0.5, 0.7, 0.9])
    said = _said(tmp_path, capsys, _draw(1000, 0, outputs), _draw(1000, 1, outputs))
    assert "dev rows" not in said and "dev pairs" not in said


def test_an_honest_split_of_a_rounded_model_is_not_warned_of(tmp_path, capsys):
    """Probabilities of 3 decimals: many test rows equal a dev row by chance, and about as
    many as dev rows equal one another."""
    dev, test = (_draw(1000, seed) for seed in (0, 1))
    said = _said(tmp_path, capsys, (dev[0].round(3), dev[1]), (test[0].round(3), test[1]))
    assert "dev rows" not in said and "dev pairs" not in said


def test_an_honest_split_of_a_few_bfloat16_rows_is_not_warned_of(tmp_path, capsys):
    """100 dev and 100 test rows of a model run in bfloat16: dev held one repeated pair, and
    its chance of 3 was taken as exact, so 17 shared rows by chance were warned of."""
    import torch

    g = torch.Generator().manual_seed(93)

    def draw() -> tuple[np.ndarray, np.ndarray]:
        s = torch.randn(100, generator=g, dtype=torch.float64)
        q = torch.sigmoid(3 * s).bfloat16().double()
        y = torch.rand(100, generator=g, dtype=torch.float64) < torch.sigmoid(s)
        return q.numpy(), y.long().numpy()

    said = _said(tmp_path, capsys, draw(), draw())
    assert "dev rows" not in said and "dev pairs" not in said


@pytest.mark.parametrize("columns", [1, 2, 3])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_copy_checks_grouping_is_torch_uniques(columns, seed):
    """The copy check grouped rows by torch.unique(dim=0), 16-20 s at 2e6 rows on a
    2-core machine; stable sorts group them alike, the groups numbered alike: rows of few
    distinct values (many equal rows, some differing in one column only), -0.0 beside
    0.0 (one value, as torch.unique compares them), and negative values."""
    import torch

    from calib_metrics.cli_recalibrate import _row_groups

    g = torch.Generator().manual_seed(seed)
    values = torch.tensor([-0.0, 0.0, 0.25, -1.5, 1e-300, 0.1 + 0.2, 0.3, 1.0], dtype=torch.float64)
    rows = values[torch.randint(0, len(values), (3000, columns), generator=g)]
    rows = torch.cat([rows, torch.rand(50, columns, generator=g, dtype=torch.float64)])
    rows = rows[torch.randperm(len(rows), generator=g)]
    expected = torch.unique(rows, dim=0, return_inverse=True)[1]
    assert torch.equal(_row_groups(rows), expected)
    assert torch.equal(_row_groups(rows[:1]), torch.zeros(1, dtype=torch.long))


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "bool"])
def test_the_copy_checks_grouping_of_rows_of_other_dtypes_is_torch_uniques(dtype):
    """-0.0 was made 0.0 by adding 0.0 to every row, which made integer rows float32:
    2**25 and 2**25 + 1 were one value, and rows differing there one group."""
    import torch

    from calib_metrics.cli_recalibrate import _row_groups

    g = torch.Generator().manual_seed(0)
    dtype = getattr(torch, dtype)
    top = {torch.bool: 2, torch.uint8: 256}.get(dtype, 7)
    rows = torch.randint(0, top, (500, 2), generator=g).to(dtype)
    if dtype in (torch.int64, torch.int32):
        rows = rows + 2**25  # integers that float32 does not all hold
    expected = torch.unique(rows, dim=0, return_inverse=True)[1]
    assert torch.equal(_row_groups(rows), expected)


def test_a_shuffled_copy_with_minus_zero_is_the_dev_pairs(tmp_path, capsys):
    """-0.0 is the probability 0.0: a test file of the dev pairs, shuffled, one 0.0
    written as -0.0, is still the dev pairs (as before the copy check sorted columns)."""
    q, y = _draw(200, 0)
    q[:3], y[:3] = 0.0, 0
    order = np.random.default_rng(1).permutation(200)
    test_q = q[order].astype(str)
    test_q[np.flatnonzero(order < 3)[0]] = "-0.0"
    dev_path = _write(tmp_path / "dev.csv", q, y)
    rows = zip(test_q.tolist(), y[order].tolist(), strict=True)
    test_path = tmp_path / "test.csv"
    test_path.write_text("prob,label\n" + "".join(f"{a},{b}\n" for a, b in rows))
    argv = ["recalibrate", str(dev_path), str(test_path), "--method", "isotonic",
            "--samples", "20", "--out", str(tmp_path / "o.csv")]  # fmt: skip
    assert main(argv) == 0
    assert f"{test_path} holds the dev pairs of {dev_path}" in capsys.readouterr().err
