"""cut_cells: the tie groups that bin boundaries cut, against a pair-by-pair count."""

import torch

from calib_metrics.functional.calibration import bins_and_index
from calib_metrics.functional.ties import cut_cells


def _brute_force(q: torch.Tensor, index: torch.Tensor) -> dict:
    """{value: {bin: pairs}} of the values that meet two bins or more."""
    cells: dict = {}
    for value, b in zip(q.tolist(), index.tolist()):
        cells.setdefault(value, {}).setdefault(b, 0)
        cells[value][b] += 1
    return {v: bins for v, bins in cells.items() if len(bins) > 1}


def test_cut_cells_match_a_pair_by_pair_count():
    g = torch.Generator().manual_seed(3)
    for n, levels, size in ((500, 7, 40), (2000, 50, 64), (300, 2, 17)):
        q = torch.randint(0, levels, (n,), generator=g).double() / levels
        q = torch.cat([q, torch.rand(n // 3, generator=g, dtype=torch.float64)])
        y = torch.bernoulli(q, generator=g)
        bins, index = bins_and_index(q, y, binning="adaptive", bin_size=size, n_bins=15)
        cells = cut_cells(q, index, bins.count.numel())
        expected = _brute_force(q, index)
        assert int(cells.cut_pair.sum()) == sum(sum(b.values()) for b in expected.values())
        assert cells.cut_pair.tolist() == [v in expected for v in q.tolist()]
        values = sorted(expected)
        got = {}
        for group, b, c in zip(
            cells.cell_group.tolist(), cells.cell_bin.tolist(), cells.cell_count.tolist()
        ):
            got.setdefault(values[group], {})[b] = c
        assert got == {v: {b: float(c) for b, c in bins.items()} for v, bins in expected.items()}
        sizes = [float(sum(expected[v].values())) for v in values]
        assert cells.group_size.tolist() == sizes
        group_of = cells.group_of_pair[cells.cut_pair].tolist()
        assert [values[k] for k in group_of] == q[cells.cut_pair].tolist()
        share = cells.share
        totals = torch.zeros(len(values), dtype=torch.float64).index_add_(
            0, cells.cell_group, share
        )
        assert torch.allclose(totals, torch.ones_like(totals))


def test_no_ties_no_cut_cells():
    q = torch.linspace(0.01, 0.99, 100, dtype=torch.float64)
    index = torch.arange(100) // 10
    cells = cut_cells(q, index, 10)
    assert not bool(cells.cut_pair.any())
    assert cells.group_size.numel() == 0 and cells.cell_bin.numel() == 0
