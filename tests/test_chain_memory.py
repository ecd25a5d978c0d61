"""The linear chain's large CPU outputs: zero pages of their own that cost nothing until
written, advised to the kernel as transparent huge pages, and padding steps never written
where each page faults on its own.

The advice itself is the kernel's business (its flags depend on the system's THP setting
and on what the allocator reused), so these tests record the calls instead of reading
/proc/self/smaps, which made them depend on the order the suite ran in.
"""

from __future__ import annotations

import mmap

import pytest
import torch

from calib_metrics.models import _memory, linear_chain
from calib_metrics.models._memory import _HUGE_PAGE, _MIN_BYTES, fresh_output

LARGE = _MIN_BYTES // 4 + 4096  # float32 elements: just over the mapping threshold


@pytest.fixture
def calls(monkeypatch) -> list[tuple[int, int, int]]:
    recorded: list[tuple[int, int, int]] = []

    def fake_madvise(address: int, length: int, advice: int) -> int:
        recorded.append((address, length, advice))
        return 0

    monkeypatch.setattr(_memory, "_madvise", lambda: fake_madvise)
    return recorded


def test_large_cpu_output_is_advised_over_its_aligned_interior(calls):
    out = fresh_output(LARGE, dtype=torch.float32, device=torch.device("cpu"))
    assert len(calls) == 1
    address, length, advice = calls[0]
    assert advice == getattr(mmap, "MADV_HUGEPAGE", advice)
    assert address % _HUGE_PAGE == 0 and length % _HUGE_PAGE == 0 and length > 0
    assert out.data_ptr() <= address and address + length <= out.data_ptr() + out.nbytes
    out.fill_(1.0)  # an ordinary tensor: writable, and freed as usual
    assert out.sum() == out.numel()


def test_mapped_output_survives_what_tensors_go_through(monkeypatch):
    monkeypatch.setattr(_memory, "_MAX_BYTES", _MIN_BYTES)  # past the bound: a mapping
    out = fresh_output(4, LARGE // 4, dtype=torch.float32, device=torch.device("cpu"))
    out[1, 7] = 2.0
    copy = out.clone()
    del out  # the mapping lives as long as the tensor; the clone is its own memory
    assert copy.shape == (4, LARGE // 4) and copy.sum() == 2.0
    shared = fresh_output(LARGE, dtype=torch.float32, device=torch.device("cpu"))
    shared[0] = 1.0
    assert shared.share_memory_().is_shared() and shared[0] == 1.0


def test_small_output_is_plain(calls):
    out = fresh_output(1024, dtype=torch.float32, device=torch.device("cpu"))
    assert out.shape == (1024,) and calls == []


def test_output_over_the_upper_bound_is_zero_pages_of_its_own(calls, monkeypatch):
    # The bound is lowered here so that the test needs no half-gigabyte tensor.
    monkeypatch.setattr(_memory, "_MAX_BYTES", _MIN_BYTES)
    out = fresh_output(LARGE, dtype=torch.float32, device=torch.device("cpu"))
    assert calls == [] and bool(out.eq(0).all()) and _memory.faults_page_by_page(out)
    advised = fresh_output(_MIN_BYTES // 4, dtype=torch.float32, device=torch.device("cpu"))
    assert not _memory.faults_page_by_page(advised)


def test_without_madvise_the_output_is_plain(monkeypatch):
    monkeypatch.setattr(_memory, "_madvise", lambda: None)
    out = fresh_output(LARGE, dtype=torch.float64, device=torch.device("cpu"))
    assert out.numel() == LARGE and out.dtype == torch.float64
    assert _memory.faults_page_by_page(out) and bool(out.eq(0).all())


@pytest.mark.parametrize(
    ("batch", "page_by_page"),
    [(3, False), (220, False), (220, True)],  # 220 sentences: a pairwise output over 32 MiB
)
def test_padded_batch_equals_each_sentence_alone(batch, page_by_page, monkeypatch):
    """Every sentence's marginals are those it has alone (no padding at all), and the
    padding is 0 — also where the padding steps are not written at all (an output whose
    pages fault one by one: past the huge-page bound, lowered here to stay small)."""
    if page_by_page:
        monkeypatch.setattr(_memory, "_MAX_BYTES", _MIN_BYTES)
    g = torch.Generator().manual_seed(0)
    length, tags = 25, 47
    em = torch.randn(batch, length, tags, generator=g)
    trans, start, end = (torch.randn(*s, generator=g) for s in [(tags, tags), (tags,), (tags,)])
    lengths = torch.randint(1, length + 1, (batch,), generator=g)
    lengths[0] = length
    mask = torch.arange(length) < lengths[:, None]
    written = []
    steps = linear_chain._written_steps

    def recorded(valid):
        written.append(steps(valid))
        return written[-1]

    monkeypatch.setattr(linear_chain, "_written_steps", recorded)
    pair = linear_chain.posterior_marginals(em, trans, start, end, mask).pairwise
    assert any(w is not None for w in written) == page_by_page
    assert pair.shape == (batch, length - 1, tags, tags)
    for b in range(0, batch, max(1, batch // 7)):
        n = int(lengths[b])
        alone = linear_chain.posterior_marginals(
            em[b : b + 1, :n], trans, start, end, torch.ones(1, n, dtype=torch.bool)
        ).pairwise[0]
        torch.testing.assert_close(pair[b, : n - 1], alone, rtol=1e-5, atol=1e-7)
        assert bool(pair[b, n - 1 :].eq(0).all())
