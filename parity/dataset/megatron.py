"""The ``megatron-core`` targets: the installed package's own ``GPTDataset`` over the drawn documents.

Only the two things megatron reads from outside are supplied here: a low-level dataset and a
tokenizer exposing ``eod``, ``pad`` and ``vocab_size``. The low-level dataset is megatron's own
``IndexedDataset`` over the ``.bin``/``.idx`` files when the documents were written to disk
(:mod:`parity.dataset.files`; the dataset then also writes and loads its index cache beside them),
else the documents held in memory (``sequence_lengths`` and ``get``, what ``IndexedDataset``
offers), which is quicker for the per-sample properties. Index building (megatron's C++ helpers),
sample assembly, the mask cache and the pad handling are megatron-core's, unchanged. The pipeline
(the builder, blends, splits) is :mod:`parity.dataset.megatron_pipeline`, mock data
:mod:`parity.dataset.megatron_mock`.

``megatron-core:fixed`` differs in two things: the upstream fix of the cache bug (what FILL stores is
a copy of the masks, not the tensors the first sample goes on to edit in place), and an index cache key
that also holds the two settings which change the sample index but which megatron-core's key leaves out
(:data:`INDEX_SETTINGS_OUTSIDE_THE_KEY`; docs/dataset.md, The index cache). It is a subclass scoped to
that target; the installed package is never modified.

See docs/dataset.md, "megatron-core as a target".
"""

from __future__ import annotations

import functools
import os
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


def import_megatron():
    """megatron.core.datasets.gpt_dataset, imported quietly: its import warns that the optional GPU
    kernels (Transformer Engine, Apex) are missing, and every index build without a cache folder
    logs a warning; neither concerns a dataset held in memory."""
    import logging
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from megatron.core.datasets import gpt_dataset
    logging.getLogger("megatron.core.datasets").setLevel(logging.ERROR)
    return gpt_dataset


def megatron_config(config, **placement):
    """megatron's ``GPTDatasetConfig`` for the harness's ``config``; ``placement`` adds the blend,
    split and cache fields. Without a blend megatron treats the data as mock data and writes no
    index cache unless given a ``path_to_cache``."""
    MegatronGPTDatasetConfig = import_megatron().GPTDatasetConfig

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
        **placement,
    )


def _build(dataset_class, documents: Sequence[np.ndarray], config):
    prefix = getattr(documents, "path_prefix", None)
    if prefix is None:
        return construct(dataset_class, InMemoryDocuments(documents), config)
    # megatron's reader over the files, and its index cache beside them, as a user's run has them
    from megatron.core.datasets.indexed_dataset import IndexedDataset

    placement = {"blend": ([prefix], None), "split": "1", "path_to_cache": os.path.join(documents.folder.name, "cache")}
    return construct(dataset_class, IndexedDataset(prefix), config, prefix, **placement)


def construct(dataset_class, low_level, config, prefix: str | None = None, **placement):
    """``dataset_class`` (megatron's ``GPTDataset`` or a subclass) over every document of
    ``low_level``, for the config's split; ``placement`` as for :func:`megatron_config`."""
    if config.num_epochs is not None:
        raise ConfigDeclined(f"megatron-core's {dataset_class.__name__} has no num_epochs (it derives epochs from num_samples)")
    from megatron.core.datasets.utils import Split

    indices = np.arange(len(low_level), dtype=np.int32)
    megatron = megatron_config(config, **placement)
    return dataset_class(low_level, prefix, indices, config.num_samples, Split[config.split], megatron)


def megatron_dataset(documents: Sequence[np.ndarray], config):
    """The ``megatron-core`` target: megatron-core's ``GPTDataset`` exactly as installed."""
    return _build(import_megatron().GPTDataset, documents, config)


def fixed_megatron_dataset(documents: Sequence[np.ndarray], config):
    """The ``megatron-core:fixed`` target: the installed ``GPTDataset`` with copy-on-FILL (and the full cache key)."""
    return _build(fixed_class(), documents, config)


# Both read the files when the documents lie on disk (docs/dataset.md, Files).
megatron_dataset.reads_files = fixed_megatron_dataset.reads_files = True


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


@functools.cache
def copy_on_fill(dataset_class: type) -> type:
    """``dataset_class`` (megatron's ``GPTDataset`` or a subclass) whose FILL stores copies. It keeps
    the class's name: megatron names its index cache files by it, and the fix must not move them."""
    return type(
        dataset_class.__name__,
        (dataset_class,),
        {
            "__doc__": f"megatron-core's {dataset_class.__name__}; FILL (the first sample on the cached path) stores copies.",
            "__module__": __name__,
            "cached_attention_mask": _CopyOnStore(),
            "cached_loss_mask": _CopyOnStore(),
            "cached_position_ids": _CopyOnStore(),
        },
    )


#: What changes ``GPTDataset``'s sample index but is not in the description megatron-core 0.14 to 0.16 hash
#: for its index cache files (``MegatronDataset._key_config_attributes``).
INDEX_SETTINGS_OUTSIDE_THE_KEY = ("add_extra_token_to_sequence", "drop_last_partial_validation_sequence")


@functools.cache
def fixed_class() -> type:
    """megatron's ``GPTDataset`` with copy-on-FILL and the index settings in its cache key; built on first
    use, so that naming the target never imports megatron. The name stays ``GPTDataset``."""
    copying = copy_on_fill(import_megatron().GPTDataset)

    def _key_config_attributes() -> list[str]:
        return [*copying._key_config_attributes(), *INDEX_SETTINGS_OUTSIDE_THE_KEY]

    return type(copying.__name__, (copying,), {
        "__doc__": f"{copying.__doc__} Its cache key also holds {', '.join(INDEX_SETTINGS_OUTSIDE_THE_KEY)}.",
        "__module__": __name__,
        "_key_config_attributes": staticmethod(_key_config_attributes),
    })
