"""The models' and queries' inputs of a dtype torch cannot compute in, or cannot hold.

float8 and packed float4 are floating dtypes torch has no arithmetic for: the chain
functions, span and tag queries and coreference log-probabilities had failed with torch's
NotImplementedError ("max_values_cpu" not implemented), while coreference_marginals
returned float8. A uint64 id above int64's maximum had wrapped to a negative value: a
coreference entity read as "no entity" (y = 0 for two mentions of one entity), a tag named
as a value never written. A directory given as a model file had been called missing."""

from __future__ import annotations

import pytest
import torch

from calib_metrics.models.coref import (
    antecedent_log_probs,
    coreference_marginals,
    sample_antecedents,
)
from calib_metrics.models.coref_ranker import AntecedentRanker
from calib_metrics.models.linear_chain import (
    log_partition,
    posterior_marginals,
    sample,
    sequence_score,
    viterbi,
)
from calib_metrics.queries import coref_pair_queries, span_marginals, tag_queries

K = 3
STORAGE = [torch.float8_e4m3fn, torch.float8_e5m2]


def _chain(dtype: torch.dtype = torch.float32, part: str = "emissions"):
    g = torch.Generator().manual_seed(0)
    parts = {
        "emissions": torch.randn(2, 4, K, generator=g),
        "transitions": torch.randn(K, K, generator=g),
        "start": torch.zeros(K),
        "end": torch.zeros(K),
    }
    parts[part] = parts[part].to(dtype)
    return tuple(parts.values())


CHAIN_CALLS = {
    "posterior_marginals": lambda c: posterior_marginals(*c),
    "log_partition": lambda c: log_partition(*c),
    "viterbi": lambda c: viterbi(*c),
    "sample": lambda c: sample(*c, n_samples=2),
    "sequence_score": lambda c: sequence_score(*c, torch.zeros(2, 4, dtype=torch.long)),
    "span_marginals": lambda c: span_marginals(*c, begin=0, inside=1, max_length=2),
}


@pytest.mark.parametrize("dtype", STORAGE)
@pytest.mark.parametrize("part", ["emissions", "transitions", "start"])
@pytest.mark.parametrize("call", list(CHAIN_CALLS))
def test_chain_scores_of_a_storage_dtype_are_refused_by_name(call, part, dtype) -> None:
    chain = _chain(dtype, part)
    with pytest.raises(
        ValueError, match=rf"{part} has dtype {dtype}, a storage format .*\.float\(\)"
    ):
        CHAIN_CALLS[call](chain)


COREF_CALLS = {
    "coreference_marginals": lambda s: coreference_marginals(s),
    "sampled coreference_marginals": lambda s: coreference_marginals(s, n_samples=10),
    "sample_antecedents": lambda s: sample_antecedents(s, n_samples=2),
    "antecedent_log_probs": lambda s: antecedent_log_probs(s),
}


@pytest.mark.parametrize("dtype", STORAGE)
@pytest.mark.parametrize("call", list(COREF_CALLS))
def test_coreference_scores_of_a_storage_dtype_are_refused_by_name(call, dtype) -> None:
    scores = torch.randn(1, 3, 3).to(dtype)
    with pytest.raises(ValueError, match=rf"scores has dtype {dtype}, a storage format"):
        COREF_CALLS[call](scores)


@pytest.mark.parametrize("dtype", STORAGE)
def test_query_probabilities_of_a_storage_dtype_are_refused_by_name(dtype) -> None:
    tags = torch.zeros(1, 2, dtype=torch.long)
    with pytest.raises(ValueError, match=rf"unigram has dtype {dtype}, a storage format"):
        tag_queries(torch.full((1, 2, K), 1 / 3).to(dtype), tags)
    with pytest.raises(ValueError, match=rf"marginals has dtype {dtype}, a storage format"):
        coref_pair_queries(torch.eye(3)[None].to(dtype), tags[:, :1].expand(1, 3))


def test_packed_float4_is_told_to_be_unpacked_not_converted() -> None:
    packed = torch.zeros(2, 4, K, dtype=torch.uint8).view(torch.float4_e2m1fn_x2)
    with pytest.raises(ValueError, match=r"emissions has dtype .*float4.*unpack it to float32"):
        posterior_marginals(packed, *_chain()[1:])


BEYOND_INT64 = 2**63 + 12345  # a 64-bit hash of an entity's name, say


def test_a_uint64_entity_id_beyond_int64_is_refused_not_read_as_no_entity() -> None:
    marginals = torch.tensor([[[1.0, 0.0], [0.9, 1.0]]], dtype=torch.float64)
    ids = torch.tensor([[BEYOND_INT64] * 2], dtype=torch.uint64)
    with pytest.raises(ValueError, match=rf"holds {BEYOND_INT64} \(dtype torch\.uint64\), above"):
        coref_pair_queries(marginals, ids)
    small = torch.tensor([[7, 7]], dtype=torch.uint64)  # within int64: read as it is
    assert coref_pair_queries(marginals, small)[1].tolist() == [1.0]


@pytest.mark.parametrize(
    "call",
    [
        lambda tags: tag_queries(torch.full((1, 1, 2), 0.5), tags),
        lambda tags: sequence_score(*_one_token_chain(), tags),
    ],
)
def test_a_uint64_tag_beyond_int64_is_named_as_written(call) -> None:
    tags = torch.tensor([[2**63 + 1]], dtype=torch.uint64)
    with pytest.raises(ValueError, match=r"tags holds 9223372036854775809 \(dtype torch\.uint64"):
        call(tags)


def _one_token_chain():
    return torch.zeros(1, 1, 2), torch.zeros(2, 2), torch.zeros(2), torch.zeros(2)


def test_a_directory_given_as_a_model_file_is_called_a_directory(tmp_path) -> None:
    with pytest.raises(ValueError, match=r"is a directory: pass the path of a saved model"):
        AntecedentRanker.load(tmp_path)
