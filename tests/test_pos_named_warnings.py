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
