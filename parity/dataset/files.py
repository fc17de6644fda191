"""Documents on disk, as megatron-core users hold them: ``.bin``/``.idx`` files written by megatron's own
``IndexedDatasetBuilder`` (docs/dataset.md, Files).

A Megatron user's tokens live in a prefix's two files, written once by megatron's preprocessing and
memory-mapped by ``IndexedDataset`` on every run. The harness writes its drawn documents the same
way, one document per item and per ``end_document``, in the dtype megatron picks for the vocabulary
(``DType.optimal_dtype``: ``uint16`` below 65500 ids, else ``int32``), into a fresh temporary folder.
The oracle never reads these files: it reads the drawn lists, so a pointer or dtype error in the
files, or in megatron's reading of them, is a difference.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence

import numpy as np


class WrittenDocuments(list):
    """The drawn documents (a list of int64 arrays, what every dataset target reads) that also lie on
    disk at ``path_prefix`` (``path_prefix + ".bin"`` and ``".idx"``), in a folder that lives as long
    as this object; ``folder`` is where a run may put its index cache."""

    def __init__(self, documents: Sequence[np.ndarray], folder: tempfile.TemporaryDirectory, path_prefix: str) -> None:
        super().__init__(documents)
        self.folder = folder
        self.path_prefix = path_prefix


def write_prefix(documents: Sequence[np.ndarray], vocab_size: int, path_prefix: str) -> str:
    """Write ``documents`` at ``path_prefix`` with megatron's ``IndexedDatasetBuilder``; returns the prefix."""
    import torch
    from megatron.core.datasets.indexed_dataset import DType, IndexedDatasetBuilder

    builder = IndexedDatasetBuilder(path_prefix + ".bin", dtype=DType.optimal_dtype(vocab_size))
    for document in documents:
        builder.add_item(torch.from_numpy(np.asarray(document, dtype=np.int64)))
        builder.end_document()
    builder.finalize(path_prefix + ".idx")
    return path_prefix


def written(documents: Sequence[np.ndarray], vocab_size: int, name: str = "documents") -> WrittenDocuments:
    """``documents`` written to a fresh temporary prefix (removed when the result is collected)."""
    folder = tempfile.TemporaryDirectory(prefix="parity-files-")
    prefix = write_prefix(documents, vocab_size, os.path.join(folder.name, name))
    return WrittenDocuments(documents, folder, prefix)
