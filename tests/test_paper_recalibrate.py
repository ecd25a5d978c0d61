"""The reproductions' --recalibrate rows on small synthetic models (no data set needed)."""

from __future__ import annotations

from typing import NamedTuple

import pytest
import torch

from calib_metrics.models import linear_chain
from calib_metrics.paper import recalibrate


def test_binary_rows_platt_helps_an_overconfident_classifier(tmp_path):
    g = torch.Generator().manual_seed(0)

    def split(n):
        s = torch.randn(n, generator=g, dtype=torch.float64)
        return torch.sigmoid(3 * s), torch.bernoulli(torch.sigmoid(s), generator=g)

    rows, curves = recalibrate.binary_rows("toy", split(1500), split(2000), n_samples=50)
    platt, iso = rows
    assert (platt["method"], iso["method"]) == ("platt", "isotonic")
    d = platt["difference"]
    assert d["difference"] == pytest.approx(platt["before"]["error"] - platt["after"]["error"])
    assert d["lower"] > 0 and platt["nll"][1] < platt["nll"][0]
    assert "toy" in recalibrate.markdown(rows)
    assert recalibrate.figure(curves, tmp_path / "f.png").endswith("f.png")


class _Split(NamedTuple):
    words: torch.Tensor
    tags: torch.Tensor
    mask: torch.Tensor


class _Chain:
    """A 'tagger' whose potentials are 3x those that generated the tags."""

    def __init__(self, em, tr):
        self.em, self.tr = em, tr

    def potentials(self, words, mask):
        k = self.tr.shape[0]
        return 3 * self.em[words], 3 * self.tr, torch.zeros(k), torch.zeros(k)


def test_chain_rows_fit_a_temperature_and_keep_accuracy():
    g = torch.Generator().manual_seed(0)
    em, tr = torch.randn(30, 3, generator=g), torch.randn(3, 3, generator=g)

    def split(n):
        words = torch.randint(30, (n, 6), generator=g)
        mask = torch.ones(n, 6, dtype=torch.bool)
        z = torch.zeros(3)
        tags = linear_chain.sample(em[words], tr, z, z, mask, n_samples=1, generator=g)[0]
        return _Split(words, tags, mask)

    model, dev, test = _Chain(em, tr), split(200), split(200)
    rows, curves = recalibrate.chain_rows("toy", model, dev, test, accuracy=0.5, n_samples=20)
    assert len(rows) == 3 and len(curves) == 3
    single = rows[0]
    assert "T = " in single["method"] and single["accuracy"] == [0.5, 0.5]
    assert single["nll"][1] < single["nll"][0]
    assert single["interval_over"] == "sentences"
