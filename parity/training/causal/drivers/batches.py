"""The oracle's rows as the tensors a causal LM is handed (docs/causal-lm.md, Trainers and their contract per
release): a row's documents side by side, right-padded with id 0 and label -100.

A row's labels are handed as the row has them, its first one included, though nothing predicts it (the oracle
never counts it): a trainer that counts it is wrong, and the harness must see it (transformers 5.5 to 5.9 count
it). Only in a row of several documents is every later document's first label written -100, since the previous
document's last token would otherwise be trained to predict it. Rows of one document each carry an
``attention_mask``. Packed rows, and any microbatch holding a row of several documents (a GPT dataset's sample split
at its EODs by ``reset_attention_mask``, served in an unpacked case too), carry ``position_ids`` restarting at each
document (the padding is one more) and no attention mask, which is how a Llama forward finds the documents and keeps
them apart (an ``attention_mask`` beside them would let each attend across); it does so only without a cache, so
the batch says ``use_cache=False``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch

from oracle.causal_lm import IGNORE_INDEX, Document, Row

PAD_ID = 0


def flat_row(row: Row) -> tuple[list[int], list[int], list[int]]:
    """(ids, labels, positions) of the row's documents side by side."""
    ids, labels, positions = [], [], []
    for k, document in enumerate(row.documents):
        ids += document.ids
        labels += [IGNORE_INDEX if k else document.labels[0], *document.labels[1:]]
        positions += range(len(document.ids))
    return ids, labels, positions


def collate_rows(rows: Sequence[Row], packed: bool) -> dict:
    """One microbatch of ``rows``: ``input_ids`` and ``labels``, with an ``attention_mask`` or, packed (or a row of
    several documents among them, whatever the case says), restarting ``position_ids`` and ``use_cache=False``."""
    packed = packed or any(len(row.documents) > 1 for row in rows)  # an attention mask would join the documents
    flat = [flat_row(row) for row in rows]
    longest = max(len(ids) for ids, _, _ in flat)
    batch = {
        "input_ids": torch.tensor([ids + [PAD_ID] * (longest - len(ids)) for ids, _, _ in flat]),
        "labels": torch.tensor([labels + [IGNORE_INDEX] * (longest - len(labels)) for _, labels, _ in flat]),
    }
    if packed:
        batch["position_ids"] = torch.tensor([positions + list(range(longest - len(positions))) for _, _, positions in flat])
        batch["use_cache"] = False
    else:
        batch["attention_mask"] = torch.tensor([[1] * len(ids) + [0] * (longest - len(ids)) for ids, _, _ in flat])
    return batch


def served_rows(batch: Mapping[str, torch.Tensor]) -> list[Row]:
    """The rows a collator of its own served (TRL's, which packs and flattens as it likes), as the oracle reads them:
    each row's attended tokens (every token, without an ``attention_mask``), a new document wherever its
    ``position_ids`` restart at 0."""
    rows = []
    for b, ids in enumerate(batch["input_ids"].tolist()):
        labels = batch["labels"][b].tolist()
        kept = batch["attention_mask"][b].tolist() if "attention_mask" in batch else [1] * len(ids)
        positions = batch["position_ids"][b].tolist() if "position_ids" in batch else list(range(len(ids)))
        documents: list[tuple[list[int], list[int]]] = []
        for token, label, position, attended in zip(ids, labels, positions, kept, strict=True):
            if not attended:
                continue
            if position == 0 or not documents:
                documents.append(([], []))
            documents[-1][0].append(token)
            documents[-1][1].append(label)
        rows.append(Row(tuple(Document(tuple(d_ids), tuple(d_labels)) for d_ids, d_labels in documents)))
    return rows
