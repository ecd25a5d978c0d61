"""A step that returns group ids to a monitor that cannot use them (the default streaming
metric, or ``interval="pairs"``) gets one warning saying the interval resamples pairs;
once, the ids were dropped without a word."""

from __future__ import annotations

import warnings

import pytest
import torch

pytest.importorskip("lightning")

from calib_metrics.callbacks import CalibrationMonitor


def _outputs(with_groups: bool) -> dict:
    g = torch.Generator().manual_seed(0)
    probs = torch.softmax(torch.randn(8, 3, generator=g), -1)
    out = {"probs": probs, "target": torch.arange(8) % 3}
    if with_groups:
        out["groups"] = torch.arange(8) // 2
    return out


@pytest.mark.parametrize(
    ("options", "said"),
    [
        ({}, "resamples pairs; pass streaming=False to"),
        ({"streaming": True, "interval": "pairs"}, "pass streaming=False and interval=None"),
        # It had been told to pass streaming=False, which it did, then to pass
        # interval=None, as if interval="pairs" were a slip rather than its choice.
        (
            {"streaming": False, "interval": "pairs"},
            "the group ids are not used: interval='pairs' was asked for, which resamples pairs$",
        ),
    ],
)
def test_ignored_group_ids_warn_once(options, said) -> None:
    monitor = CalibrationMonitor(num_classes=3, **options)
    with pytest.warns(UserWarning, match=said) as told:
        assert len(monitor.extract_batch(_outputs(True), None)) == 2
    assert len([w for w in told if "group ids" in str(w.message)]) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        monitor.extract_batch(_outputs(True), None)  # once only


def test_used_or_absent_group_ids_do_not_warn() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(CalibrationMonitor(num_classes=3).extract_batch(_outputs(False), None)) == 2
        grouped = CalibrationMonitor(num_classes=3, streaming=False)
        assert len(grouped.extract_batch(_outputs(True), None)) == 3


@pytest.mark.parametrize("streaming", [False, True])
def test_the_paper_interval_is_told_to_resample_groups_too(streaming) -> None:
    """It read '...pass  to resample whole groups' (nothing to pass), and said the paper's
    interval resamples pairs: Algorithm 2 draws each bin's frequency from a normal."""
    monitor = CalibrationMonitor(num_classes=3, streaming=streaming, interval="paper")
    with pytest.warns(
        UserWarning, match=r"pass .*interval=None \(or 'groups'\) to resample"
    ) as said:
        monitor.extract_batch(_outputs(True), None)
    (message,) = [str(w.message) for w in said if "keeps no group ids" in str(w.message)]
    assert "resamples pairs" not in message
    assert "Algorithm 2) draws each bin's frequency from a normal" in message


@pytest.mark.parametrize("options", [{}, {"streaming": False, "interval": "pairs"}])
def test_group_ids_from_extract_are_ignored_with_the_same_warning(options) -> None:
    """extract returning (probs, target, groups) to a monitor that keeps no group ids
    raised "extract must return (probs, target) or None, got 3 items", while the same ids
    in the step's dict only warned once, as docs/callbacks.md says."""

    def extract(outputs: dict, batch: object) -> tuple:
        return outputs["probs"], outputs["target"], outputs["groups"]

    monitor = CalibrationMonitor(num_classes=3, extract=extract, **options)
    with pytest.warns(UserWarning, match="extract returns group ids.*resamples pairs"):
        probs, target = monitor.extract_batch(_outputs(True), None)
    assert probs.shape == (8, 3) and target.shape == (8,)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(monitor.extract_batch(_outputs(True), None)) == 2  # once only
