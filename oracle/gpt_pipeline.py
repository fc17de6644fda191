"""The reference for megatron-core's whole data pipeline (docs/dataset.md, Blends and splits).

Given the documents of each prefix (the lists the harness drew, never the files written from them),
the blend weights, the split string and the samples wanted per split, it serves what megatron's
builder must serve: for each split, each prefix's share of its documents
(:func:`oracle.blend_reference.split_documents`) as an :class:`~oracle.gpt_dataset.OracleGPTDataset`
asked for the samples the blend builds of it; with weights, a blended split whose sample ``k`` is
sample ``dataset_sample_index[k]`` of dataset ``dataset_index[k]``
(:func:`oracle.blend_reference.blending_indices`), served with its ``dataset_id`` (an int).

The config is read by attribute; each split's datasets get a copy with that split's name and sample
count (``dataclasses.replace``: the config is a dataclass). Nothing here imports the implementation
or the harness.
"""

from __future__ import annotations

import dataclasses

import torch

from oracle.blend_reference import (
    SPLIT_NAMES,
    blending_indices,
    built_samples,
    requested_samples,
    split_bookends,
    split_documents,
)
from oracle.gpt_dataset import OracleGPTDataset

#: megatron-core's default ``mid_level_dataset_surplus``: the margin each blended dataset builds.
SURPLUS = 0.005


class OracleSplit:
    """One split: a dataset per prefix, the documents each is built from, and, for a blend, which
    dataset and which of its samples each blended sample is."""

    def __init__(self, prefixes, weights, split: str, name: str, size: int | None, config) -> None:
        self.name = name
        position = SPLIT_NAMES.index(name)
        #: Per prefix, the positions of its documents this split's dataset is built from.
        self.documents = [split_documents(split, len(documents))[position] for documents in prefixes]
        # A single prefix with no split string is built directly, weights or not (as megatron does).
        self.blended = weights is not None and not (split is None and len(prefixes) == 1)
        counts = built_samples(weights, size, SURPLUS) if self.blended else [size]
        self.datasets = [
            OracleGPTDataset([documents[d] for d in kept], dataclasses.replace(config, split=name, num_samples=count))
            for documents, kept, count in zip(prefixes, self.documents, counts)
        ]
        if self.blended:
            self.size = sum(requested_samples(weights, size))
            self.dataset_index, self.dataset_sample_index = blending_indices(weights, self.size)
        else:
            self.size = len(self.datasets[0])

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, k: int) -> dict[str, torch.Tensor]:
        if not 0 <= k < len(self):
            raise IndexError(f"{self.name} index {k} out of range [0, {len(self)})")
        if not self.blended:
            return self.datasets[0][k]
        dataset = self.dataset_index[k]
        return {"dataset_id": dataset, **self.datasets[dataset][self.dataset_sample_index[k]]}


def oracle_splits(prefixes, weights, split: str, sizes, config) -> list[OracleSplit | None]:
    """Train, valid and test as the builder must build them; None for a split of weight 0.

    ``weights`` None with one prefix: that prefix's datasets serve the splits directly; ``split``
    None: every split is built from the whole of each prefix (megatron's ``blend_per_split``)."""
    if weights is None and len(prefixes) != 1:
        raise ValueError(f"a blend of {len(prefixes)} prefixes needs weights")
    kept = [True] * len(SPLIT_NAMES) if split is None else [bookend is not None for bookend in split_bookends(split)]
    return [
        OracleSplit(prefixes, weights, split, name, size, config) if keep else None
        for name, size, keep in zip(SPLIT_NAMES, sizes, kept)
    ]
