"""``reproduce pos`` scores each tag and tag pair on its own: a warning of one query (its
interval of zero width, say) had not said which tag it was of, among 17 to 50."""

from __future__ import annotations

import argparse
import warnings

import torch

from calib_metrics.functional.zero_width import ZeroWidthWarning
from calib_metrics.paper import pos


def _pure_and_mixed(n: int = 200) -> tuple[torch.Tensor, torch.Tensor]:
    """Two tags' queries: NN's bins of 100 are each all 0 or all 1 (Algorithm 2's draws
    then all equal: an interval of zero width), VB's are mixed."""
    g = torch.Generator().manual_seed(0)
    pure_q = torch.cat([torch.full((n // 2,), 0.1), torch.full((n // 2,), 0.9)])
    pure_y = torch.cat([torch.zeros(n // 2), torch.ones(n // 2)])
    mixed_q = torch.rand(n, generator=g)
    mixed_y = torch.bernoulli(mixed_q, generator=g)
    return torch.stack([pure_q, mixed_q]).double(), torch.stack([pure_y, mixed_y]).double()


def test_a_tag_s_zero_width_warning_names_the_tag() -> None:
    q, y = _pure_and_mixed()
    queries = pos.Queries(q, y, q[:1], y[:1], torch.arange(q.shape[1]), torch.arange(q.shape[1]))
    args = argparse.Namespace(bin_size=100, n_samples=200, top_pairs=[1])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pos._summaries(queries, torch.tensor([[0, 1]]), ["NN", "VB"], args, seed=0)
    said = [str(w.message) for w in caught if issubclass(w.category, ZeroWidthWarning)]
    assert any(text.startswith("tag NN: ") and "zero width" in text for text in said), said
    assert any(text.startswith("tag pair NN VB: ") for text in said), said
    assert not any(text.startswith("tag VB") for text in said), said


def test_the_command_drops_the_function_name_of_a_named_warning() -> None:
    """``reproduce`` shows a tag's warning as ``tag NN: 5 pairs; ...``: with the tag put
    before the library function's name, the command could no longer drop that name and
    showed ``tag NN: calibration_error_ci: 5 pairs; ...``."""
    from calib_metrics import cli
    from calib_metrics.functional import calibration_error_ci
    from calib_metrics.paper.report import named_warnings

    q, y = torch.tensor([0.1, 0.4, 0.6, 0.8, 0.9]), torch.tensor([0, 0, 1, 1, 1])
    with cli._warnings_as_lines() as lines:
        named_warnings("tag NN", calibration_error_ci, q, y, n_samples=20)
    assert lines, "five pairs gave no warning"
    assert all(line.startswith("calib-metrics: warning: tag NN: ") for line in lines), lines
    assert not any("calibration_error_ci" in line for line in lines), lines


def test_the_command_still_hides_algorithm_2_s_debiased_draws_note_of_a_tag() -> None:
    """The command notes Algorithm 2's debiased draws in its own words; its filter had
    matched the library's text only at the start, so a tag's named copy came through."""
    from calib_metrics import cli
    from calib_metrics.functional.paper_warnings import DEBIASED_PAPER_DRAWS
    from calib_metrics.paper.report import named_warnings

    def estimate() -> float:
        warnings.warn(DEBIASED_PAPER_DRAWS, stacklevel=2)
        return 0.1

    with cli._warnings_as_lines() as lines:
        named_warnings("tag NN", estimate)
    assert lines == [], lines
