"""Tests for the hashed-feature antecedent ranker and its features."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import conllu
import numpy as np
import pytest
import torch

from calib_metrics.models.coref import (
    antecedent_log_probs,
    coreference_marginals,
    sample_antecedents,
)
from calib_metrics.models.coref_ranker import AntecedentRanker, DocumentFeatures
from calib_metrics.paper.coref_conllu import Document, Mention
from calib_metrics.paper.coref_features import (
    distance_bucket,
    extract_features,
    features_for,
    mention_type,
)

NAMES = ["Alpha", "Beta", "Gamma", "Delta", "Omega", "Sigma"]


def token(k: int, form: str, upos: str = "PROPN", xpos: str = "NNP") -> dict:
    return {"id": k + 1, "form": form, "lemma": form.lower(), "upos": upos, "xpos": xpos,
            "feats": None, "head": 0, "deprel": "root", "deps": None, "misc": None}  # fmt: skip


def name_doc(seed: int, n_mentions: int = 12, doc_id: str = "d") -> Document:
    """One single-word name mention per sentence; a mention's entity is its name."""
    g = torch.Generator().manual_seed(seed)
    picks = torch.randint(0, len(NAMES), (n_mentions,), generator=g).tolist()
    sentences, mentions = [], []
    for s, k in enumerate(picks):
        sentences.append(conllu.TokenList([token(0, NAMES[k]), token(1, "left", "VERB", "VBD")]))
        mentions.append(Mention(s, 0, 1, 0, NAMES[k]))
    return Document(doc_id, {}, sentences, mentions)


def test_feature_helpers():
    assert distance_bucket(torch.tensor([0, 3, 6, 9, 20, 40])).tolist() == [0, 3, 5, 6, 7, 8]
    assert mention_type("PRON", "PRP$", "his", False) == 0
    assert mention_type("NOUN", "NN", "dog", False) == 2
    assert mention_type(None, None, "She", True) == 0
    assert mention_type(None, None, "The", True) == 2  # sentence-initial capital is no name


def test_features_window_and_shapes():
    doc = name_doc(0, n_mentions=10)
    f = extract_features(doc, n_bits=12, max_distance=3)
    assert f.n == 10
    assert ((f.pair_i - f.pair_j) >= 1).all() and ((f.pair_i - f.pair_j) <= 3).all()
    assert f.pair_i.numel() == 1 + 2 + 3 * 7  # i = 1, 2, then 3 candidates for i = 3..9
    assert f.pair_feats.shape[0] == f.pair_i.numel() and f.new_feats.shape[0] == 10
    assert int(f.pair_feats.max()) < 2**12 and int(f.pair_feats.min()) >= 0
    with pytest.raises(ValueError, match="n_bits"):
        extract_features(doc, n_bits=2)
    with pytest.raises(ValueError, match="max_distance"):
        extract_features(doc, max_distance=0)


def test_scores_layout_and_window():
    model = AntecedentRanker(n_bits=12, max_distance=3)
    with torch.no_grad():
        model.weight.normal_(generator=torch.Generator().manual_seed(0))
    scores = model(features_for(model, name_doc(1, n_mentions=8)))
    assert scores.shape == (8, 8)
    i, j = torch.tril_indices(8, 8, offset=-1)
    inside = (i - j) <= 3
    assert torch.isfinite(scores[i[inside], j[inside]]).all()
    assert torch.isinf(scores[i[~inside], j[~inside]]).all()  # beyond the window
    assert torch.isfinite(scores.diagonal()).all()  # NEW is always scored
    assert torch.isinf(scores.triu(1)[scores.triu(1) != 0]).all()
    # -inf entries get probability 0 and the marginals stay finite and valid
    logp = antecedent_log_probs(scores[None])
    assert torch.allclose(logp.exp().sum(-1), torch.ones(1, 8, dtype=logp.dtype))
    q = coreference_marginals(scores[None])
    assert torch.isfinite(q).all() and (q >= 0).all() and (q <= 1).all()


def test_score_batch_pads_and_matches_single_documents():
    model = AntecedentRanker(n_bits=12)
    with torch.no_grad():
        model.weight.normal_(generator=torch.Generator().manual_seed(1))
    docs = [features_for(model, d) for d in (name_doc(2, 5), name_doc(3, 9))]
    scores, mask = model.score_batch(docs)
    assert scores.shape == (2, 9, 9)
    assert mask.sum(-1).tolist() == [5, 9]
    assert torch.isfinite(scores[0, 5:, :]).all()  # padding is finite
    single = model(docs[0])
    assert torch.equal(scores[0, :5, :5], single)
    batched = coreference_marginals(scores, mask=mask)[0, :5, :5]
    assert torch.allclose(batched, coreference_marginals(single[None])[0], atol=1e-6)
    with pytest.raises(ValueError, match="at least one"):
        model.score_batch([])


def test_gold_options():
    doc = name_doc(4, 6)
    f = extract_features(doc, n_bits=10, max_distance=2)
    gold = AntecedentRanker.gold_options(f)
    ents = [m.entity for m in doc.mentions]
    for i in range(6):
        earlier = [j for j in range(max(0, i - 2), i) if ents[j] == ents[i]]
        expected = set(earlier) if earlier else {i}
        assert set(torch.nonzero(gold[i]).flatten().tolist()) == expected


def test_training_raises_gold_likelihood_and_separable_data_gets_near_one():
    model = AntecedentRanker(n_bits=14, max_distance=20)
    docs = [features_for(model, name_doc(s, 14, f"d{s}")) for s in range(6)]
    with torch.no_grad():
        before = sum(float(model.gold_log_likelihood(d)[0]) for d in docs)
    history = model.fit(
        docs, l2=1e-6, epochs=25, lr=0.5, generator=torch.Generator().manual_seed(0)
    )
    with torch.no_grad():
        after = sum(float(model.gold_log_likelihood(d)[0]) for d in docs)
    assert len(history) == 26
    assert history[-1] < history[0] and after > before
    # exact string match identifies the entity, so every gold choice becomes near certain
    total, count = 0.0, 0
    with torch.no_grad():
        for d in docs:
            ll, c = model.gold_log_likelihood(d)
            total, count = total + float(ll), count + c
    assert total / count > -0.1, f"mean gold log-prob {total / count:.3f}"
    held_out = name_doc(99, 14)
    q = coreference_marginals(model(features_for(model, held_out))[None])[0]
    ents = [m.entity for m in held_out.mentions]
    same = torch.tensor([[a == b for b in ents] for a in ents])
    assert (q[same] > 0.9).all() and (q[~same] < 0.1).all()


def test_fit_rejects_bad_options():
    model = AntecedentRanker(n_bits=8)
    docs = [features_for(model, name_doc(0, 4))]
    for kwargs, message in (({"l2": -1.0}, "l2"), ({"epochs": -1}, "epochs"),
                            ({"batch_size": 0}, "batch_size"), ({"lr": 0.0}, "lr")):  # fmt: skip
        with pytest.raises(ValueError, match=message):
            model.fit(docs, **kwargs)
    with pytest.raises(ValueError, match="n_bits"):
        AntecedentRanker(n_bits=40)
    with pytest.raises(ValueError, match="max_distance"):
        model(extract_features(name_doc(0, 4), n_bits=8, max_distance=7))
    with pytest.raises(ValueError, match="DocumentFeatures"):
        model(name_doc(0, 4))  # a reader's Document is not a model input


def test_int_options_refuse_bools():
    # True had been taken for 1: a window of one mention, one epoch, batches of one.
    with pytest.raises(ValueError, match="max_distance must be a positive integer, got True"):
        AntecedentRanker(4, max_distance=True)
    model = AntecedentRanker(n_bits=8)
    docs = [features_for(model, name_doc(0, 4))]
    for option in ("epochs", "batch_size"):
        with pytest.raises(ValueError, match=f"{option} must be .*, got True"):
            model.fit(docs, **{option: True})


def test_save_load_round_trip(tmp_path: Path):
    model = AntecedentRanker(n_bits=10, max_distance=5)
    with torch.no_grad():
        model.weight.normal_(generator=torch.Generator().manual_seed(2))
    path = model.save(tmp_path / "r.pt")
    loaded = AntecedentRanker.load(path)
    doc = features_for(model, name_doc(5, 7))
    assert torch.equal(model(doc), loaded(doc))
    assert loaded.max_distance == 5
    (tmp_path / "bad.pt").write_bytes(b"")
    with pytest.raises(FileNotFoundError):
        AntecedentRanker.load(tmp_path / "none.pt")


def test_a_ranker_saved_in_float64_loads_in_float64(tmp_path: Path):
    """The weight had been copied into a fresh float32 model: the dtype was lost."""
    model = AntecedentRanker(n_bits=8, max_distance=3).double()
    with torch.no_grad():
        model.weight.normal_(generator=torch.Generator().manual_seed(0))
    loaded = AntecedentRanker.load(model.save(tmp_path / "r.pt"))
    assert loaded.weight.dtype == torch.float64
    assert torch.equal(loaded.weight, model.weight)


_WEIGHT = torch.zeros(256)


@pytest.mark.parametrize(
    ("state", "message"),
    [
        ({"format": 1, "n_bits": 8}, "missing the field.*'max_distance', 'weight'"),
        ({"format": 1, "max_distance": 5, "weight": _WEIGHT}, "missing the field.*'n_bits'"),
        (
            {"format": 1, "n_bits": 8, "max_distance": 5, "weight": torch.zeros(10)},
            r"field 'weight' must have shape \[2\*\*n_bits\] = \[256\], got \[10\]",
        ),
        (
            {"format": 1, "n_bits": 8, "max_distance": 5, "weight": _WEIGHT.long()},
            "field 'weight' must be a floating-point tensor, got torch.int64",
        ),
        (
            {"format": 1, "n_bits": 8, "max_distance": 5, "weight": _WEIGHT + math.nan},
            "field 'weight' holds NaN or infinite values",
        ),
        (
            {"format": 1, "n_bits": 8, "max_distance": 5, "weight": _WEIGHT - math.inf},
            "field 'weight' holds NaN or infinite values",
        ),
        ({"format": 1, "n_bits": 3, "max_distance": 5, "weight": _WEIGHT}, "n_bits must be"),
        ({"format": 1, "n_bits": 8, "max_distance": 0, "weight": _WEIGHT}, "max_distance must"),
    ],
)
def test_a_malformed_ranker_file_is_a_value_error_naming_file_and_field(
    tmp_path: Path, state: dict, message: str
):
    """A missing field had been a KeyError, a weight of the wrong size a RuntimeError of
    copy_, and a NaN weight loaded silently (every score NaN)."""
    path = tmp_path / "ranker.pt"
    torch.save(state, path)
    with pytest.raises(ValueError, match=message) as caught:
        AntecedentRanker.load(path)
    assert str(caught.value).startswith(str(path))


def test_a_user_scores_and_samples_with_hand_made_tensors():
    """No corpus reader: a user's own pipeline hands the ranker feature-id tensors."""
    n = 4
    i, j = torch.tril_indices(n, n, offset=-1)  # every earlier mention is a candidate
    same = torch.tensor([0, 1, 0, 1])  # mentions 0, 2 and 1, 3 corefer
    pair_feats = torch.stack([(same[i] == same[j]).long() + 1, torch.full_like(i, 3)], -1)
    features = DocumentFeatures(
        n=n,
        pair_i=i,
        pair_j=j,
        pair_feats=pair_feats,
        new_feats=torch.full((n, 1), 4),
        entity=same,
        max_distance=n,
    )
    model = AntecedentRanker(n_bits=4, max_distance=n)
    history = model.fit([features], l2=0.0, epochs=30, lr=0.5)
    assert history[-1] < history[0]
    with torch.no_grad():
        scores, mask = model.score_batch([features])
    assert scores.shape == (1, n, n) and mask.all()
    samples = sample_antecedents(scores, 50, mask=mask, generator=torch.Generator().manual_seed(0))
    assert samples.shape == (50, 1, n)
    assert (samples <= torch.arange(n)).all()  # an antecedent is earlier, or itself (NEW)
    q = coreference_marginals(scores, mask=mask)[0]
    assert q[2, 0] > 0.5 and q[3, 1] > 0.5 and q[1, 0] < 0.5


SCRIPT = """
import sys, torch
sys.path.insert(0, {root!r})
sys.path.insert(0, {tests!r})
from test_coref_ranker import name_doc
from calib_metrics.paper.coref_features import extract_features
f = extract_features(name_doc(7, 9), n_bits=20)
print(f.pair_feats.long().sum().item(), f.new_feats.long().sum().item(), f.pair_feats[3].tolist())
"""


def test_hashing_is_deterministic_across_processes():
    root = str(Path(__file__).resolve().parents[1])
    tests = str(Path(__file__).resolve().parent)
    outputs = set()
    # the parent's string-hash seed is random; the child's is fixed and (almost surely) differs
    for seed in ("12345",):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run(
            [sys.executable, "-c", SCRIPT.format(root=root, tests=tests)],
            capture_output=True, text=True, env=env, check=True, timeout=120,
        )  # fmt: skip
        outputs.add(done.stdout.strip())
    f = extract_features(name_doc(7, 9), n_bits=20)
    here = f"{f.pair_feats.long().sum().item()} {f.new_feats.long().sum().item()} "
    here += str(f.pair_feats[3].tolist())
    assert outputs == {here}


def _hand_made(**changes) -> DocumentFeatures:
    fields = dict(n=3, pair_i=torch.tensor([1, 2, 2]), pair_j=torch.tensor([0, 1, 0]),
                  pair_feats=torch.tensor([[1, 2], [3, 4], [5, 6]]),
                  new_feats=torch.tensor([[7], [7], [8]]), entity=torch.tensor([0, 1, 0]),
                  max_distance=2)  # fmt: skip
    return DocumentFeatures(**(fields | changes))


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"pair_feats": torch.tensor([[1, 2], [3, 4], [5, 16]])}, r"pair_feats ids .*\[0, 2\*\*"),
        ({"new_feats": torch.tensor([[7], [-1], [8]])}, "new_feats ids"),
        ({"pair_j": torch.tensor([0, 2, 0])}, "every pair needs 0 < pair_i - pair_j"),
        ({"pair_j": torch.tensor([-1, 1, 0])}, "pair_j >= 0"),
        ({"pair_i": torch.tensor([1, 2, 3]), "pair_j": torch.tensor([0, 1, 2])}, "pair_i < n"),
        ({"new_feats": torch.tensor([[7], [7]])}, r"new_feats must have 3 rows \(n\), got 2"),
        ({"pair_feats": torch.tensor([[1.0, 2.0]] * 3)}, "pair_feats must be a 2-d integer"),
    ],
)
def test_hand_made_features_that_do_not_fit_together_are_named(changes, message):
    """A user's own pipeline gets a ValueError naming the field (before: IndexError or a
    RuntimeError from deep inside, or a pair above the diagonal scored silently)."""
    model = AntecedentRanker(n_bits=4, max_distance=2)
    model(_hand_made())  # the unchanged document is fine
    with pytest.raises(ValueError, match=message):
        model(_hand_made(**changes))


@pytest.mark.parametrize("n", [np.int64(3), np.int32(3), torch.tensor(3)])
def test_document_features_take_any_integral_mention_count(n):
    """n = np.int64(3) had been refused ("must be an int") while n_samples elsewhere takes
    NumPy integers; it is read as the Python int 3."""
    model = AntecedentRanker(n_bits=4, max_distance=2)
    f = _hand_made(n=n)
    assert type(f.n) is int and f.n == 3
    assert torch.equal(model(f), model(_hand_made()))


@pytest.mark.parametrize("n", [np.int64(3), torch.tensor(3)])
def test_a_mention_count_set_after_construction_follows_the_same_rule(n):
    """The ranker's check had taken a Python int only: n = np.int64(3) set after
    construction was refused ("must be an int >= 0, got np.int64(3)")."""
    model = AntecedentRanker(n_bits=4, max_distance=2)
    f = _hand_made()
    f.n = n
    assert torch.equal(model(f), model(_hand_made()))
    assert type(f.n) is int and f.n == 3
    f.n = True
    with pytest.raises(ValueError, match=r"DocumentFeatures\.n must be an int, got bool"):
        model(f)


@pytest.mark.parametrize("n", [True, 3.0, -1, "3"])
def test_document_features_refuse_a_mention_count_that_is_no_integer(n):
    with pytest.raises(ValueError, match=r"DocumentFeatures\.n must be"):
        AntecedentRanker(n_bits=4, max_distance=2)(_hand_made(n=n))


@pytest.mark.parametrize("field", ["pair_i", "pair_j", "pair_feats", "new_feats", "entity"])
def test_bool_index_fields_are_refused_by_name(field):
    """A bool pair_i or pair_j passed the dtype check (it is no float) and failed in
    torch ("Subtraction, the `-` operator, with two bool tensors is not supported")."""
    model = AntecedentRanker(n_bits=4, max_distance=2)
    flags = getattr(_hand_made(), field) > 0
    with pytest.raises(ValueError, match=rf"DocumentFeatures\.{field} must be a .*integer"):
        model(_hand_made(**{field: flags}))
    both = _hand_made(pair_i=torch.tensor([True, True, True]), pair_j=torch.tensor([False] * 3))
    with pytest.raises(ValueError, match=r"DocumentFeatures\.pair_i must be a 1-d integer"):
        model.score_batch([both])


def test_documents_of_different_feature_widths_train_together() -> None:
    """DocumentFeatures fixes no number of templates, and scoring one document took any;
    fit() and objective() joined a batch's features with torch.cat, which raised torch's
    size error (an empty document's features written as [0, 0] were enough)."""
    narrow = DocumentFeatures(
        n=2, pair_i=torch.tensor([1]), pair_j=torch.tensor([0]),
        pair_feats=torch.tensor([[1, 2]]), new_feats=torch.tensor([[7], [7]]),
        entity=torch.tensor([0, 0]), max_distance=2,
    )  # fmt: skip
    wide = DocumentFeatures(
        n=3, pair_i=torch.tensor([1, 2, 2]), pair_j=torch.tensor([0, 1, 0]),
        pair_feats=torch.tensor([[1, 2, 3], [3, 4, 5], [5, 6, 7]]),
        new_feats=torch.tensor([[7, 8], [7, 8], [8, 9]]),
        entity=torch.tensor([0, 1, 0]), max_distance=2,
    )  # fmt: skip
    ranker = AntecedentRanker(n_bits=8, max_distance=2)
    torch.nn.init.normal_(ranker.weight, generator=torch.Generator().manual_seed(0))
    alone = [ranker(narrow), ranker(wide)]
    for got, want in zip(ranker._score_many([narrow, wide]), alone, strict=True):
        torch.testing.assert_close(got, want)
    pooled = ranker.objective([narrow, wide], 0.0)
    counts = [ranker.gold_log_likelihood(d)[1] for d in (narrow, wide)]
    per_doc = [ranker.objective([d], 0.0) * c for d, c in zip((narrow, wide), counts, strict=True)]
    assert pooled == pytest.approx(sum(per_doc) / sum(counts))
    ranker.fit([narrow, wide], epochs=1)
