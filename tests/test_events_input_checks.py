"""The event analysis' public helpers refuse what they cannot count (each had returned
numbers for it): antecedents outside ``0 <= a[:, i] <= i``, events other than 0/1, NaN
samples, non-tensors, and dates not written ``YYYY[-MM[-DD]]``."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from calib_metrics.paper.events.analysis import document_date, document_period
from calib_metrics.paper.events.errors import decision_effects
from calib_metrics.paper.events.stats import poisson_binomial_summary, sample_summary

EVENTS = torch.tensor([True, False, True, False])


@pytest.mark.parametrize(
    "antecedents",
    [
        [[0, 3, 0], [0, 1, 0], [0, 0, 2], [0, 1, 1]],  # a = N: had counted for mention 2
        [[0, 0, 0], [0, 1, -1], [0, 0, 2], [0, 1, 1]],  # negative: mention 1's last choice
        [[0, 0, 2], [0, 1, 3], [0, 0, 2], [0, 1, 1]],  # a > i inside [0, N)
    ],
)
def test_decision_effects_refuses_antecedents_that_are_no_clustering(antecedents) -> None:
    with pytest.raises(ValueError, match=r"0 <= a\[:, i\] <= i"):
        decision_effects(torch.tensor(antecedents), EVENTS)


def test_decision_effects_refuses_events_other_than_0_1_and_no_samples() -> None:
    a = torch.tensor([[0, 0], [0, 1]])
    with pytest.raises(ValueError, match="events must be bool or hold only 0 and 1"):
        decision_effects(a, torch.tensor([0.5, 7.0]))  # had "explained" 10.56
    with pytest.raises(ValueError, match="no samples"):
        decision_effects(torch.zeros(0, 3, dtype=torch.long), torch.zeros(0, dtype=torch.bool))
    with pytest.raises(ValueError, match="antecedents must be an integer tensor"):
        decision_effects(a.double(), torch.tensor([True, False]))
    with pytest.raises(ValueError, match=r"probs must be a floating-point \[N, N\]"):
        decision_effects(a, torch.tensor([True, False]), probs=torch.ones(3, 3))
    # 0/1 events of any dtype count as bool ones do.
    as_bool = decision_effects(a, torch.tensor([True, False]))
    as_float = decision_effects(a, torch.tensor([1.0, 0.0]))
    for got, want in zip(as_float, as_bool, strict=True):
        torch.testing.assert_close(got, want, equal_nan=True)


def test_sample_summaries_refuse_nan_samples_and_non_tensors() -> None:
    with pytest.raises(ValueError, match="finite"):
        sample_summary(torch.tensor([[1.0], [float("nan")], [2.0]]))  # had a NaN mean, lower 1
    with pytest.raises(ValueError, match=r"samples must be a torch\.Tensor, got list"):
        sample_summary([[1.0], [2.0]])
    with pytest.raises(ValueError, match=r"probs must be a torch\.Tensor, got list"):
        poisson_binomial_summary([[0.5]])


@pytest.mark.parametrize(
    "written", ["15-08-21", "2015-08-21-99", "2015-", "2015/08/21", "２０１５"]
)
def test_a_date_not_written_yyyy_mm_dd_is_refused(written: str) -> None:
    doc = SimpleNamespace(doc_id="d", meta={"dateCreated": written})
    with pytest.raises(ValueError, match=r"document d: bad dateCreated .*YYYY\[-MM\[-DD\]\]"):
        document_period(doc, "year")  # "15-08-21" had been the year 0015


def test_dates_written_yyyy_mm_dd_still_read() -> None:
    docs = {v: SimpleNamespace(meta={"dateCreated": v}) for v in ("2015-08-21", " 2015-8 ", "1999")}
    assert [document_period(d, "year") for d in docs.values()] == ["2015", "2015", "1999"]
    assert document_date(docs["2015-08-21"]).isoformat() == "2015-08-21"
    assert document_period(docs[" 2015-8 "], "month") == "2015-08"
