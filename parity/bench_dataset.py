"""How fast the cached dataset is (part of ``python -m parity bench``).

Two figures: building the indices for a realistic corpus (10^6 tokens in 10^5 documents), and
serving a sample from the cache versus recomputing the masks versus the oracle: the cache exists
to make serving cheap, so the ratio is what it is judged by.
"""

from __future__ import annotations

import time

import numpy as np
import torch

from impl.gpt_dataset import GPTDataset, GPTDatasetConfig
from impl.mock_data import mock_documents
from oracle.gpt_dataset import OracleGPTDataset

INDEX_TOKENS = 10**6
INDEX_DOCUMENTS = 10**5
SERVE_SEQUENCE_LENGTH = 512


def bench_dataset() -> dict:
    return {
        "index_build": _bench_index_build(),
        "serve": _bench_serve(),
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
    oracle = OracleGPTDataset(documents, cached.config)
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
