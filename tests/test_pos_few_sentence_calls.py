"""``reproduce pos`` calls tags that few test sentences hold: the library's rule that calls
no label of fewer than 50 resampling units counts the sentences of a label's queries, and
a tag's one-vs-rest queries span every test sentence, so EWT's GW (20 tokens in 16
sentences) was called "really better" without a word. results.md now names such calls."""

from __future__ import annotations

import torch

from calib_metrics.functional.comparison_by_label import SMALL_LABEL_UNITS
from calib_metrics.paper import paired, pos

SENTENCES, TOKENS = 300, 10


def _rare_tag_comparison() -> dict:
    """Two tags over 3,000 tokens in 300 sentences: RARE on every token of 15 sentences,
    where model a says 0.3 and model b 0.95; COMMON on every other token, where both say
    the same."""
    sentence = torch.arange(SENTENCES).repeat_interleave(TOKENS)
    y = torch.zeros(2, SENTENCES * TOKENS, dtype=torch.float64)
    rare = (sentence % 20 == 0).nonzero().squeeze(1)  # every 20th sentence
    y[0, rare] = 1.0
    y[1] = (torch.arange(SENTENCES * TOKENS) % 2).double()
    q_b = torch.full_like(y, 0.001)
    q_b[0, rare] = 0.95
    q_b[1] = 0.5
    q_a = q_b.clone()
    q_a[0, rare] = 0.3
    return paired.by_label(q_a, q_b, y, ["RARE", "COMMON"], groups=sentence, quick=True)


def test_a_tag_few_sentences_hold_is_called_and_said_to_be() -> None:
    r = _rare_tag_comparison()
    rare = r["per_label"]["RARE"]
    # Every tag's queries span all 300 sentences, so the rule leaves RARE in: it is called.
    assert rare["verdict"] == 1 and rare["holding"] == 15 < SMALL_LABEL_UNITS
    assert r["per_label"]["COMMON"]["holding"] == SENTENCES
    comparisons = {"crf_matched": {"per_tag": r}, "crf": {"per_tag": r}}
    lines = pos._paired_markdown(comparisons, quick=True)
    (line,) = [x for x in lines if x.startswith("Called although")]
    assert line.startswith(
        f"Called although fewer than {SMALL_LABEL_UNITS} test sentences hold the label (their "
        "count in brackets): CRF (accuracy-matched), 1 of 2 tags: `RARE` (15); CRF (all "
        "train), 1 of 2 tags: `RARE` (15). "
    )
    assert "read these calls with care" in line
    # Uncalled, it is not named.
    rare["verdict"] = 0
    assert not any(x.startswith("Called although") for x in pos._paired_markdown(comparisons, True))
