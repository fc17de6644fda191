"""How fast the cached dataset and its property suite are: ``python -m parity.bench_dataset`` (repo root).

Three figures: building the indices for a realistic corpus (10^6 tokens in 10^5 documents), serving
a sample from the cache versus recomputing the masks versus the oracle, and how many property-1
examples per second Hypothesis gets through (which decides how many a CI minute can afford). Run
from the repository root, since the property checks live in ``tests/``.
"""

from __future__ import annotations

import json
import time

import numpy as np
import torch

from impl.gpt_dataset import GPTDataset, GPTDatasetConfig
from impl.mock_data import mock_documents
from oracle.gpt_dataset import OracleGPTDataset

INDEX_TOKENS = 10**6
INDEX_DOCUMENTS = 10**5
SERVE_SEQUENCE_LENGTH = 512
PROPERTY_EXAMPLES = 200


def bench_dataset() -> dict:
    return {
        "index_build": _bench_index_build(),
        "serve": _bench_serve(),
        "property_matches_oracle": _bench_property(),
    }


def _bench_index_build() -> dict:
    rng = np.random.default_rng(0)
    # Lengths of at least 1 that add up to exactly INDEX_TOKENS.
    lengths = 1 + rng.multinomial(INDEX_TOKENS - INDEX_DOCUMENTS, np.full(INDEX_DOCUMENTS, 1 / INDEX_DOCUMENTS))
    documents = [rng.integers(1, 50_000, size=length) for length in lengths]
    config = GPTDatasetConfig(sequence_length=1024, vocab_size=50_000, eod_id=0)
    seconds = _best_of(3, lambda: GPTDataset(documents, config))
    return {"tokens": INDEX_TOKENS, "documents": INDEX_DOCUMENTS, "seconds": round(seconds, 4)}


def _bench_serve() -> dict:
    """Per-sample time with one torch thread, as in a DataLoader worker (torch sets that there)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return _serve_times()
    finally:
        torch.set_num_threads(threads)


def _serve_times() -> dict:
    documents = mock_documents(num_documents=200, vocab_size=1000, eod_id=0, seed=0)
    cached = GPTDataset(documents, GPTDatasetConfig(SERVE_SEQUENCE_LENGTH, vocab_size=1000, eod_id=0, pad_id=7))
    # eod_mask_loss costs one comparison but switches the cache off: the same work, masks recomputed.
    uncached = GPTDataset(
        documents, GPTDatasetConfig(SERVE_SEQUENCE_LENGTH, vocab_size=1000, eod_id=0, pad_id=7, eod_mask_loss=True)
    )
    oracle = OracleGPTDataset(documents, cached.config, cached.document_index, cached.shuffle_index)
    impl_us = _per_sample_us(cached, 500)
    uncached_us = _per_sample_us(uncached, 500)
    oracle_us = _per_sample_us(oracle, 5)
    return {
        "sequence_length": SERVE_SEQUENCE_LENGTH,
        "impl_cached_us_per_sample": round(impl_us, 1),
        "impl_recomputing_masks_us_per_sample": round(uncached_us, 1),
        "oracle_us_per_sample": round(oracle_us, 1),
        "oracle_over_impl": round(oracle_us / impl_us, 1),
        "recomputing_over_cached": round(uncached_us / impl_us, 2),
    }


def _bench_property() -> dict:
    from hypothesis import HealthCheck, Phase, given, settings

    from tests.dataset.properties import check_matches_oracle
    from tests.dataset.strategies import dataset_cases

    examples = 0

    @settings(
        max_examples=PROPERTY_EXAMPLES,
        phases=[Phase.generate],
        database=None,
        derandomize=True,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(dataset_cases())
    def run(case):
        nonlocal examples
        examples += 1
        check_matches_oracle(GPTDataset, case)

    start = time.perf_counter()
    run()
    seconds = time.perf_counter() - start
    return {"examples": examples, "seconds": round(seconds, 3), "examples_per_second": round(examples / seconds, 1)}


def _per_sample_us(dataset, samples: int) -> float:
    dataset[0]  # the first call fills the cache; time the steady state
    count = min(samples, len(dataset))
    start = time.perf_counter()
    for k in range(count):
        dataset[k]
    return (time.perf_counter() - start) / count * 1e6


def _best_of(repeats: int, work) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - start)
    return best


if __name__ == "__main__":
    print(json.dumps(bench_dataset(), indent=2))
