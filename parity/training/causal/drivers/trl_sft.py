"""TRL's ``SFTTrainer`` as shipped, in its three ways of batching, on a causal-LM case (docs/causal-lm.md, TRL).

TRL prepares the data itself, so it is handed what a user hands it: every document of this case's rows as a
pre-tokenized example (``input_ids`` and a ``completion_mask``, 1 where the row supervises a token), in serving
order, and it builds the labels, pads, flattens or packs them. Its own collator is watched, and each microbatch's
rows are read off what it served (:func:`parity.training.causal.drivers.batches.served_rows`): the documents TRL
packed together are the ones the oracle runs. Everything else is TRL's default but what makes one optimizer step
one window of plain SGD in the case's dtype (:func:`parity.training.causal.drivers.hf_trainer.causal_arguments`),
and ``bf16=False``: TRL turns on bfloat16 autocast by default, where the case's dtype is the weights'.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from oracle.causal_lm import IGNORE_INDEX
from parity.training.causal.drivers.batches import served_rows
from parity.training.causal.drivers.hf_trainer import causal_arguments, observed_run, serving_order
from parity.training.causal.record import CausalCase, CausalRecord
from parity.training.causal.rows import case_rows
from parity.training.observe import RunObserver
from parity.training.shipped import tiny_tokenizer


@dataclass(frozen=True)
class SftMode:
    """One way of running ``SFTTrainer``: the ``SFTConfig`` fields that choose it (``max_length`` packing's is the
    case's own)."""

    name: str
    sft_config: Mapping[str, Any] = field(default_factory=dict)

    @property
    def packs(self) -> bool:
        return bool(self.sft_config.get("packing"))


#: Loss on the completion only, padded microbatches.
COMPLETION_ONLY = SftMode("completion_only_loss", MappingProxyType({"completion_only_loss": True}))
#: Every microbatch flattened into one row, positions restarting per document; without packing TRL needs
#: ``max_length=None``.
PADDING_FREE = SftMode("padding_free", MappingProxyType({"completion_only_loss": True, "padding_free": True,
                                                          "max_length": None}))
#: Documents packed into rows of the case's ``max_length`` by best-fit decreasing.
PACKING = SftMode("packing", MappingProxyType({"completion_only_loss": True, "packing": True, "packing_strategy": "bfd"}))


def sft_examples(rows: Sequence) -> dict[str, list[list[int]]]:
    """Every document of ``rows`` in serving order, as TRL's pre-tokenized columns."""
    documents = [document for row in serving_order(rows) for document in row.documents]
    return {"input_ids": [list(d.ids) for d in documents],
            "completion_mask": [[int(label != IGNORE_INDEX) for label in d.labels] for d in documents]}


def run_sft(mode: SftMode, case: CausalCase, rank: int = 0, world_size: int = 1,
            rows: Sequence | None = None) -> CausalRecord:
    """``SFTTrainer(...).train()`` in ``mode`` on ``case`` as rank ``rank`` of ``world_size``."""
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    rows = case_rows(case) if rows is None else rows
    documents_per_row = len(rows[0][0][0][0].documents)
    # unpacked by TRL, a microbatch is as many documents as the case's rows hold; packed, as many of TRL's rows
    batch = case.rows_per_microbatch * (1 if mode.packs else documents_per_row)
    values = {"max_length": case.max_length} if mode.packs else {}

    def build(model, observer: RunObserver, output_dir: str):
        args = causal_arguments(case, output_dir, world_size, arguments=SFTConfig, bf16=False,
                                **{**mode.sft_config, **values, "per_device_train_batch_size": batch})
        trainer = SFTTrainer(model=model, args=args, train_dataset=Dataset.from_dict(sft_examples(rows)),
                             processing_class=tiny_tokenizer(model.config), callbacks=[observer])
        trainer.data_collator = observer.collator(trainer.data_collator)
        return trainer

    return observed_run(case, rank, build, lambda served: served_rows(served.batch))
