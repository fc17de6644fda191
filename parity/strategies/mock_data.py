"""Mock documents as upstream's ``MockGPTLowLevelDataset`` (``--mock-data``) builds them (docs/dataset.md, Mock data).

Test data of the harness (an explicit example and the dataset benchmark use it), not production code.

Every document is the same ramp ``1, 2, 3, ...`` (modulo the vocabulary) closed by an EOD, so any
in-vocabulary pad id occurs as ordinary data in almost every sample: the input that makes the
cache bug fire on nearly every sample instead of only on the padded last one.
"""

from __future__ import annotations

import numpy as np


def mock_documents(
    num_documents: int, vocab_size: int, eod_id: int, seed: int, max_length: int = 4096
) -> list[np.ndarray]:
    """``num_documents`` int64 ramps with lengths drawn from ``[1, max_length)`` by a seeded RNG."""
    if num_documents < 1:
        raise ValueError(f"num_documents must be an integer >= 1, got {num_documents}")
    if vocab_size < 1:
        raise ValueError(f"vocab_size must be an integer >= 1, got {vocab_size}")
    if not 0 <= eod_id < vocab_size:
        raise ValueError(f"eod_id must be in [0, vocab_size={vocab_size}), got {eod_id}")
    if max_length < 2:
        raise ValueError(f"max_length must be an integer >= 2, got {max_length}")
    lengths = np.random.default_rng(seed).integers(1, max_length, size=num_documents)
    return [
        np.append((np.arange(length - 1, dtype=np.int64) + 1) % vocab_size, np.int64(eod_id))
        for length in lengths
    ]
