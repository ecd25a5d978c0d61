"""aggregate_events: one sample is an estimate, not an exact clustering, and the indices
that counts() adds the samples by live on the samples' device."""

from __future__ import annotations

import events_fixtures as fx
import pytest
import torch

from calib_metrics.models.coref import entity_roots
from calib_metrics.paper.countries import CountryLexicon
from calib_metrics.paper.events.analysis import EventExtractor, aggregate_events, gold_antecedents


@pytest.fixture(scope="module")
def table_and_roots(tmp_path_factory):
    """nmod_active's mention table and its gold roots ``[1, N]``, which give a FRA event."""
    path = tmp_path_factory.mktemp("lex") / "test.actors.txt"
    path.write_text(fx.LEXICON)
    doc = next(d for d in fx.read() if d.doc_id == "nmod_active")
    table = EventExtractor(CountryLexicon.load(path)).table(doc)
    return table, entity_roots(gold_antecedents(doc))[None]


def _exact(table, roots, **options) -> list[bool]:
    return aggregate_events([table], [roots], ["2015"], **options).exact.tolist()


def test_one_sample_is_not_read_as_an_exact_clustering(table_and_roots):
    """A row of roots had been exact whatever it was: sample_entity_roots(n_samples=1) too."""
    table, roots = table_and_roots
    assert _exact(table, roots, n_samples=1) == [False]
    assert _exact(table, roots, deterministic=False) == [False]
    # Gold and 1-best clusterings, as the experiment passes them (and by default), are exact.
    assert _exact(table, roots, deterministic=True) == [True]
    assert _exact(table, roots) == [True]
    assert _exact(table, roots, n_samples=1, deterministic=True) == [True]
    # Beside more samples, one row can only be a clustering broadcast to them.
    assert _exact(table, roots, n_samples=5, deterministic=False) == [True]
    assert _exact(table, roots.expand(5, -1)) == [False]
    with pytest.raises(ValueError, match="deterministic must be True or False, got 'no'"):
        _exact(table, roots, deterministic="no")


def test_the_indices_live_on_the_samples_device(table_and_roots, monkeypatch):
    """pair_doc, pair_code, doc_period (and exact) had been built on the CPU whatever the
    samples' device, so counts()' index_add_ mixed CPU indices with CUDA samples. Without
    a GPU the meta device stands in: the samples are moved there as they are stacked (meta
    tensors hold no values for the roots' checks), and index_add_ checks devices there as
    on CUDA."""
    table, roots = table_and_roots
    stack = torch.stack

    def stack_samples_on_meta(tensors, dim=0, **kwargs):
        stacked = stack(tensors, dim, **kwargs)
        return stacked.to("meta") if dim == 1 else stacked  # the pairs' columns only

    monkeypatch.setattr(torch, "stack", stack_samples_on_meta)
    analysis = aggregate_events([table], [roots.expand(3, -1)], ["2015"])
    monkeypatch.undo()
    assert analysis.pair_samples.device.type == "meta"
    for name in ("doc_period", "pair_doc", "pair_code", "exact"):
        assert getattr(analysis, name).device.type == "meta", name
    assert analysis.counts().shape == (3, 1, 1)
