"""The ``megatron-core`` targets: the installed package's own ``GPTDataset`` over the drawn documents.

Only the two things megatron reads from outside are supplied here: a low-level dataset holding the
documents in memory (``sequence_lengths`` and ``get``, what megatron's ``IndexedDataset`` offers)
and a tokenizer exposing ``eod``, ``pad`` and ``vocab_size``. Index building (megatron's C++
helpers), sample assembly, the mask cache and the pad handling are megatron-core's, unchanged.

``megatron-core:fixed`` differs in one thing only, the upstream fix of the cache bug: what FILL
stores is a copy of the masks, not the tensors the first sample goes on to edit in place. It is a
subclass scoped to that target; the installed package is never modified.

See docs/dataset.md, "megatron-core as a target".
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version

import numpy as np

from parity.targets import ConfigDeclined

DISTRIBUTION = "megatron-core"


def megatron_version() -> str | None:
    """The installed megatron-core version, read from its metadata (without importing it)."""
    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        return None


class InMemoryDocuments:
    """A low-level dataset in the shape megatron's ``GPTDataset`` reads an ``IndexedDataset``."""

    def __init__(self, documents: Sequence[np.ndarray]) -> None:
        self.documents = [np.asarray(document, dtype=np.int64) for document in documents]
        self.sequence_lengths = np.array([len(document) for document in self.documents], dtype=np.int32)

    def __len__(self) -> int:
        return len(self.documents)

    def __getitem__(self, idx: int) -> np.ndarray:
        return self.documents[idx]

    def get(self, idx: int, offset: int = 0, length: int | None = None) -> np.ndarray:
        document = self.documents[idx]
        if length is None:
            return document[offset:]
        return document[offset : offset + length]


class HarnessTokenizer:
    """The tokenizer attributes megatron's datasets read: ``eod``, ``pad``, ``vocab_size``."""

    def __init__(self, vocab_size: int, eod: int, pad: int) -> None:
        self.vocab_size = vocab_size
        self.eod = eod
        self.pad = pad
        # Megatron folds the tokenizer into the description it hashes for its index cache.
        self.unique_identifiers = {"class": type(self).__name__, "vocab_size": vocab_size, "eod": eod, "pad": pad}


def _import_megatron():
    """megatron.core.datasets.gpt_dataset, imported quietly: its import warns that the optional GPU
    kernels (Transformer Engine, Apex) are missing, and every index build without a cache folder
    logs a warning; neither concerns a dataset held in memory."""
    import logging
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from megatron.core.datasets import gpt_dataset
    logging.getLogger(gpt_dataset.__name__).setLevel(logging.ERROR)
    return gpt_dataset


def _megatron_config(config):
    MegatronGPTDatasetConfig = _import_megatron().GPTDatasetConfig

    return MegatronGPTDatasetConfig(
        random_seed=config.random_seed,
        sequence_length=config.sequence_length,
        tokenizer=HarnessTokenizer(config.vocab_size, config.eod_id, config.pad_id),
        reset_position_ids=config.reset_position_ids,
        reset_attention_mask=config.reset_attention_mask,
        eod_mask_loss=config.eod_mask_loss,
        create_attention_mask=config.create_attention_mask,
        drop_last_partial_validation_sequence=config.drop_last_partial_validation_sequence,
        add_extra_token_to_sequence=config.add_extra_token,
        # No blend: megatron treats the data as mock data and writes no index cache to disk.
    )


def _build(dataset_class, documents: Sequence[np.ndarray], config):
    if config.num_epochs is not None:
        raise ConfigDeclined("megatron-core's GPTDataset has no num_epochs (it derives epochs from num_samples)")
    from megatron.core.datasets.utils import Split

    low_level = InMemoryDocuments(documents)
    return dataset_class(
        low_level,
        None,
        np.arange(len(low_level), dtype=np.int32),
        config.num_samples,
        Split[config.split],
        _megatron_config(config),
    )


def megatron_dataset(documents: Sequence[np.ndarray], config):
    """The ``megatron-core`` target: megatron-core's ``GPTDataset`` exactly as installed."""
    return _build(_import_megatron().GPTDataset, documents, config)


def fixed_megatron_dataset(documents: Sequence[np.ndarray], config):
    """The ``megatron-core:fixed`` target: the installed ``GPTDataset`` with copy-on-FILL."""
    return _build(_fixed_class(), documents, config)


class _CopyOnStore:
    """An instance attribute whose stored tensor is a copy of the one assigned."""

    def __set_name__(self, owner, name: str) -> None:
        self.slot = f"_copy_of_{name}"

    def __get__(self, instance, owner=None):
        if instance is None:
            return self
        return instance.__dict__.get(self.slot)

    def __set__(self, instance, value) -> None:
        instance.__dict__[self.slot] = None if value is None else value.clone()


_FIXED = None


def _fixed_class():
    """Built on first use, so that naming the target never imports megatron."""
    global _FIXED
    if _FIXED is None:

        class CopyOnFillGPTDataset(_import_megatron().GPTDataset):
            """megatron-core's GPTDataset; FILL (the first sample on the cached path) stores copies."""

            cached_attention_mask = _CopyOnStore()
            cached_loss_mask = _CopyOnStore()
            cached_position_ids = _CopyOnStore()

        _FIXED = CopyOnFillGPTDataset
    return _FIXED
