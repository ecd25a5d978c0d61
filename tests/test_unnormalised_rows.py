"""Multiclass rows that do not sum to 1 are neither refused nor renormalised, by every
entry alike (docs/measures.md): one-vs-rest and classwise score each column as the
probability of its class (multilabel sigmoid outputs pass as they are), top-label takes
the row's maximum as its confidence. These tests pin that the functions, the metric
(exact and streaming) and the comparison agree with the binary pairs so made, and that
each warns (a softmax over the batch, not the classes, gave 0.56 for 0.03 silently)."""

from __future__ import annotations

import warnings

import pytest
import torch

from calib_metrics import CalibrationComparison, CalibrationError
from calib_metrics.functional import (
    calibration_error,
    compare_calibration,
    smooth_calibration_error,
    spiegelhalter_test,
)

G = torch.Generator().manual_seed(0)
PROBS = torch.rand(300, 4, generator=G, dtype=torch.float64)  # rows sum to ~2, not 1
TARGET = torch.randint(0, 4, (300,), generator=G)
ONEHOT = torch.nn.functional.one_hot(TARGET, 4).double()
CONFIDENCE, PREDICTED = PROBS.max(-1)
PAIRS = {
    "one_vs_rest": (PROBS.reshape(-1), ONEHOT.reshape(-1)),
    "top_label": (CONFIDENCE, (PREDICTED == TARGET).double()),
}


@pytest.mark.parametrize("mode", PAIRS)
def test_functions_score_the_rows_as_given(mode: str) -> None:
    q, y = PAIRS[mode]
    assert calibration_error(PROBS, TARGET, mode=mode) == calibration_error(q, y)
    assert smooth_calibration_error(PROBS, TARGET, mode=mode) == smooth_calibration_error(q, y)
    # one-vs-rest is grouped by item (an item's labels are not independent), as documented
    groups = torch.arange(300).repeat_interleave(4) if mode == "one_vs_rest" else None
    assert spiegelhalter_test(PROBS, TARGET, mode=mode) == spiegelhalter_test(q, y, groups=groups)
    columns = [calibration_error(PROBS[:, c], ONEHOT[:, c]) for c in range(4)]
    assert calibration_error(PROBS, TARGET, mode="classwise") == torch.stack(columns).mean()


@pytest.mark.parametrize("streaming", [False, True])
@pytest.mark.parametrize("mode", ["one_vs_rest", "top_label", "classwise"])
def test_the_metrics_agree_with_the_functions(mode: str, streaming: bool) -> None:
    metric = CalibrationError(
        num_classes=4, mode=mode, streaming=streaming, resolution=512
    )  # keeps 1024 rows (top-label rows of 4 probabilities: 409): exact
    for rows in torch.arange(300).split(100):
        metric.update(PROBS[rows], TARGET[rows])
    assert metric.compute() == calibration_error(PROBS, TARGET, mode=mode)
    compare = CalibrationComparison(num_classes=4, mode=mode, n_samples=50)
    compare.update(PROBS, PROBS / 2, TARGET)
    want = compare_calibration(
        PROBS,
        PROBS / 2,
        TARGET,
        mode=mode,
        n_samples=50,
        generator=torch.Generator().manual_seed(0),
    )
    assert compare.compute().difference == want.difference


def test_a_softmax_over_the_batch_gives_an_error_that_means_nothing() -> None:
    """docs/measures.md's numbers: a model calibrated by construction (N = 2,000,
    C = 10), its top-label error with the rows right and with softmax(dim=0)."""
    generator = torch.Generator().manual_seed(0)
    logits = 2 * torch.randn(2000, 10, generator=generator)
    target = torch.multinomial(logits.softmax(-1), 1, generator=generator).squeeze(-1)
    right = calibration_error(logits.softmax(-1), target, mode="top_label")
    with pytest.warns(UserWarning, match="rows of class probabilities"):
        wrong = calibration_error(logits.softmax(0), target, mode="top_label")
    assert (round(right.item(), 2), round(wrong.item(), 2)) == (0.03, 0.56)


def test_the_functions_warn_about_rows_that_do_not_sum_to_1() -> None:
    stable = r"^probs: rows of class probabilities do not sum to 1 \(within 0.01\)"
    with pytest.warns(UserWarning, match=stable):
        calibration_error(PROBS, TARGET, mode="top_label")
    softmax = PROBS.softmax(-1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        calibration_error(softmax, TARGET, mode="top_label")


@pytest.mark.parametrize("streaming", [False, True])
def test_the_metric_warns_once_about_rows_that_do_not_sum_to_1(streaming: bool) -> None:
    metric = CalibrationError(num_classes=4, mode="top_label", streaming=streaming)
    batch_over_items = torch.randn(300, 4, generator=G).softmax(dim=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        metric.update(batch_over_items, TARGET)
        metric(batch_over_items, TARGET)
        metric.update(batch_over_items, TARGET)
        metric.compute()
    rows = [w for w in caught if "rows of class probabilities" in str(w.message)]
    assert len(rows) == 1
    assert "dim=-1" in str(rows[0].message)
    assert rows[0].filename == __file__  # the caller's line, not the library's


def test_the_metric_s_count_is_said_to_be_its_first_such_batch_s() -> None:
    """Warned once, the count is the first batch's: "10 of 100 rows" had read as the
    whole run's, while the later batches' rows went unchecked (all 100 of the next)."""
    metric = CalibrationError(num_classes=4)
    probs = PROBS[:100].softmax(-1)
    first = probs.clone()
    first[:10] *= 2  # rows summing to 2
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        metric.update(probs, TARGET[:100])  # every row sums to 1
        metric.update(first, TARGET[:100])
        metric.update(PROBS[100:200], TARGET[100:200])
    [said] = [str(w.message) for w in caught if "rows of class probabilities" in str(w.message)]
    assert said.startswith(
        "CalibrationError: 10 of 100 rows (row 0 sums to 2) in the first batch with any such "
        "rows (warned once; later batches are not checked): rows of class probabilities do "
        "not sum to 1 (within 0.01)"
    )


def test_padding_rows_do_not_count_for_the_row_sums() -> None:
    probs = PROBS.softmax(-1).clone()
    probs[:10] = 0.0  # padding rows, dropped by ignore_index
    target = TARGET.clone()
    target[:10] = -100
    metric = CalibrationError(num_classes=4, ignore_index=-100)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        metric.update(probs, target)


def test_the_comparison_warns_once_at_update_and_not_again_at_compute() -> None:
    metric = CalibrationComparison(num_classes=4, n_samples=20)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            metric.update(PROBS.softmax(-1), PROBS, TARGET)
        metric.compute()
    rows = [str(w.message) for w in caught if "rows of class probabilities" in str(w.message)]
    assert len(rows) == 1 and rows[0].startswith("CalibrationComparison: probs_b: 299 of 300")


def _ten_rows_off() -> tuple[torch.Tensor, torch.Tensor]:
    """100 rows of class probabilities, and a copy whose first 10 rows sum to 2."""
    probs = PROBS[:100].softmax(-1)
    bad = probs.clone()
    bad[:10] *= 2
    return probs, bad


def _row_sum_messages(caught: list) -> list[str]:
    return [str(w.message) for w in caught if "rows of class probabilities" in str(w.message)]


def test_the_comparison_checks_both_models_of_the_batch_it_warns_of() -> None:
    """probs_a's rows set the comparison's one warned flag, and probs_b of the same batch,
    every row of it off, went unchecked: the warning named probs_a alone."""
    probs, bad_a = _ten_rows_off()
    metric = CalibrationComparison(num_classes=4, n_samples=20)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        metric.update(bad_a, probs * 0.5, TARGET[:100])
        metric.update(probs, probs * 0.2, TARGET[:100])
    said = _row_sum_messages(caught)
    assert [message.split(" (row")[0] for message in said] == [
        "CalibrationComparison: probs_a: 10 of 100 rows",
        "CalibrationComparison: probs_b: 100 of 100 rows",
    ]
    assert all(w.filename == __file__ for w in caught if "rows of class" in str(w.message))


def test_the_comparison_checks_probs_b_in_a_later_batch_after_probs_a_warned() -> None:
    """One warned flag per object: once probs_a had warned, a later batch whose probs_b
    alone was a softmax over the batch went unchecked, and model B was never named."""
    probs, bad_a = _ten_rows_off()
    metric = CalibrationComparison(num_classes=4, n_samples=20)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        metric.update(bad_a, probs, TARGET[:100])
        metric.update(bad_a, probs, TARGET[:100])  # probs_a warned once only
        metric.update(probs, PROBS[:100].softmax(0), TARGET[:100])
    said = _row_sum_messages(caught)
    assert [message.split(" (row")[0] for message in said] == [
        "CalibrationComparison: probs_a: 10 of 100 rows",
        "CalibrationComparison: probs_b: 100 of 100 rows",
    ]


def test_the_comparisons_forward_warns_once_per_input_with_its_updates() -> None:
    """forward's batch comparison kept its own once: a later update warned of the same
    inputs a second time."""
    probs = PROBS[:100].softmax(-1)
    metric = CalibrationComparison(num_classes=4, n_samples=20)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        metric(probs * 2, probs, TARGET[:100])
        metric.update(probs * 2, probs * 2, TARGET[:100])
    said = _row_sum_messages(caught)
    assert [message.split(":")[1].strip() for message in said] == ["probs_a", "probs_b"]


def test_the_comparisons_forward_warns_at_the_callers_line() -> None:
    """As CalibrationError's forward does: probs_b's warning had named a line of
    metric_compare.py, where forward updates its batch comparison."""
    probs, bad_b = _ten_rows_off()
    metric = CalibrationComparison(num_classes=4, n_samples=20)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        metric(probs, bad_b, TARGET[:100])
    [warned] = [w for w in caught if "rows of class probabilities" in str(w.message)]
    assert str(warned.message).startswith("CalibrationComparison: probs_b: 10 of 100 rows")
    assert warned.filename == __file__


def test_compare_names_the_model_whose_rows_do_not_sum_to_1() -> None:
    with pytest.warns(UserWarning, match=r"^probs_b: rows of class probabilities") as caught:
        compare_calibration(PROBS.softmax(-1), PROBS, TARGET, n_samples=20)
    assert all("probs_a" not in str(w.message) for w in caught)
