"""megatron-core's mock data as a target: ``MockGPTDataset`` over ``MockGPTLowLevelDataset`` (docs/dataset.md, Mock data).

What ``--mock-data`` runs: no files, no blend, documents megatron makes up itself, each a ramp
``1, 2, 3, ...`` closed by the EOD (0.16 wraps the ramp at the vocabulary size, 0.14 and 0.15 do
not). The harness draws how many documents and how long each is (megatron's own low-level dataset
draws 100000 lengths from a fixed seed; a property needs a few), and megatron's own
``MockGPTLowLevelDataset`` makes their tokens; the oracle reads the ramps the harness drew
(:func:`parity.strategies.mock_data.mock_documents`). Documents that are not megatron's ramp for
their length are declined: this target serves only megatron's own mock data.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np

from parity.dataset.megatron import HarnessTokenizer, construct, copy_on_fill, import_megatron
from parity.targets import ConfigDeclined


@functools.cache
def drawn_lengths_class() -> type:
    """megatron's ``MockGPTLowLevelDataset`` with the drawn document lengths in place of its own 100000."""
    low_level = import_megatron().MockGPTLowLevelDataset

    def __init__(self, tokenizer, lengths) -> None:
        low_level.__init__(self, tokenizer)
        self.sequence_lengths = np.asarray(lengths, dtype=np.int32)
        self.size = len(self.sequence_lengths)

    return type("MockGPTLowLevelDataset", (low_level,), {"__init__": __init__, "__module__": __name__})


def _build(dataset_class, documents: Sequence[np.ndarray], config):
    tokenizer = HarnessTokenizer(config.vocab_size, config.eod_id, config.pad_id)
    low_level = drawn_lengths_class()(tokenizer, [len(document) for document in documents])
    for number, document in enumerate(documents):
        if not np.array_equal(low_level[number], document):
            raise ConfigDeclined(f"document {number} is not megatron's mock ramp of its length: megatron-core:mock makes its own")
    return construct(dataset_class, low_level, config)


def mock_dataset(documents: Sequence[np.ndarray], config):
    """The ``megatron-core:mock`` target: megatron-core's ``MockGPTDataset`` exactly as installed."""
    return _build(import_megatron().MockGPTDataset, documents, config)


def fixed_mock_dataset(documents: Sequence[np.ndarray], config):
    """The ``megatron-core:mock:fixed`` target: ``MockGPTDataset`` with copy-on-FILL."""
    return _build(copy_on_fill(import_megatron().MockGPTDataset), documents, config)
