"""How fast the cached dataset is (part of ``python -m parity bench``).

Figures: building the indices for a realistic corpus (10^6 tokens in 10^5 documents), and
serving a sample from the cache versus recomputing the masks versus the oracle: the cache exists
to make serving cheap, so the ratio is what it is judged by. When megatron-core is installed, its
own ``GPTDataset`` (C++ index helpers) is timed beside impl on the same work: index build, and
serving at L = 512 and 4096, with and without the ``[1, L, L]`` attention mask (megatron hands its
cached mask out by reference and writable, impl shares it write-protected: docs/dataset.md, Shared masks).
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np
import torch

from oracle.gpt_dataset import OracleGPTDataset
from parity.dataset.impl import impl_dataset
from parity.dataset_config import GPTDatasetConfig
from parity.strategies.mock_data import mock_documents

INDEX_TOKENS = 10**6
INDEX_DOCUMENTS = 10**5
SERVE_SEQUENCE_LENGTH = 512


MEGATRON_SEQUENCE_LENGTHS = (512, 4096)


def bench_dataset(megatron: bool | None = None) -> dict:
    """``megatron``: time megatron-core beside impl (default: when it is installed)."""
    from parity.dataset.megatron import megatron_version

    result = {"index_build": _bench_index_build(), "serve": _bench_serve()}
    if megatron is None:
        megatron = megatron_version() is not None
    if megatron:
        result["megatron"] = bench_against_megatron()
    return result


def _index_documents() -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    # Lengths of at least 1 that add up to exactly INDEX_TOKENS.
    lengths = 1 + rng.multinomial(INDEX_TOKENS - INDEX_DOCUMENTS, np.full(INDEX_DOCUMENTS, 1 / INDEX_DOCUMENTS))
    return [rng.integers(1, 50_000, size=length) for length in lengths]


INDEX_CONFIG = GPTDatasetConfig(sequence_length=1024, vocab_size=50_000, eod_id=0)


def _bench_index_build() -> dict:
    documents = _index_documents()
    seconds = _best_of(3, lambda: impl_dataset(documents, INDEX_CONFIG))
    return {"tokens": INDEX_TOKENS, "documents": INDEX_DOCUMENTS, "seconds": round(seconds, 4)}


def bench_against_megatron() -> dict:
    """impl beside megatron-core's own GPTDataset (unpatched: the fix does not change its speed)."""
    from parity.dataset.megatron import megatron_dataset, megatron_version

    documents = _index_documents()
    megatron_dataset(documents[:10], INDEX_CONFIG)  # import megatron before any clock starts
    impl_s = _best_of(3, lambda: impl_dataset(documents, INDEX_CONFIG))
    megatron_s = _best_of(3, lambda: megatron_dataset(documents, INDEX_CONFIG))
    result = {
        "version": megatron_version(),
        "index_build": {
            "tokens": INDEX_TOKENS,
            "documents": INDEX_DOCUMENTS,
            "impl_seconds": round(impl_s, 4),
            "megatron_seconds": round(megatron_s, 4),
            "impl_over_megatron": round(impl_s / megatron_s, 2),
        },
        "serve": [],
    }
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        serve_documents = mock_documents(num_documents=200, vocab_size=1000, eod_id=0, seed=0)
        for length in MEGATRON_SEQUENCE_LENGTHS:
            for attention_mask in (True, False):
                config = GPTDatasetConfig(length, vocab_size=1000, eod_id=0, pad_id=7, create_attention_mask=attention_mask)
                samples = 300 if length <= 512 else 100
                impl_us = _per_sample_us(impl_dataset(serve_documents, config), samples)
                megatron_us = _per_sample_us(megatron_dataset(serve_documents, config), samples)
                result["serve"].append(
                    {
                        "sequence_length": length,
                        "attention_mask": attention_mask,
                        "impl_us_per_sample": round(impl_us, 1),
                        "megatron_us_per_sample": round(megatron_us, 1),
                        "impl_over_megatron": round(impl_us / megatron_us, 2),
                    }
                )
    finally:
        torch.set_num_threads(threads)
    return result


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
    config = GPTDatasetConfig(SERVE_SEQUENCE_LENGTH, vocab_size=1000, eod_id=0, pad_id=7)
    cached = impl_dataset(documents, config)
    # eod_mask_loss costs one comparison but switches the cache off: the same work, masks recomputed.
    uncached = impl_dataset(documents, replace(config, eod_mask_loss=True))
    oracle = OracleGPTDataset(documents, config)
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
