"""The Protocols in parity.targets are the real contract: targets written only against them pass.

Each target here imports nothing from ``impl``; it is built from the documented interface alone
(and, for brevity, the oracle's own helpers), then held to the table's properties like any other.
"""

from __future__ import annotations

import numpy as np
import pytest

from oracle.gpt_dataset import OracleGPTDataset
from oracle.nemotron_diffusion import eos_padding_rule, forward_process
from parity.table.rows import PROPERTIES
from parity.targets import DatasetFactory, DiffusionLoss, GPTDatasetLike, Target

HERE = __name__


class MinimalDataset:
    """A ``GPTDatasetLike``: no cache, masks rebuilt on every call."""

    def __init__(self, documents, config):
        self._served = OracleGPTDataset(documents, config)
        self.document_index = np.asarray(self._served.indices["document_index"])
        self.shuffle_index = np.asarray(self._served.indices["shuffle_index"])

    def __len__(self) -> int:
        return len(self._served)

    def __getitem__(self, idx):
        return self._served[idx]


class MinimalLoss:
    """A ``DiffusionLoss``: the whole window noised first, each microbatch over the window's count."""

    loss_is_scaled_for_ga = True

    def prepare_window(self, window, *, mask_token_id, eos_token_id, eps, generator, vocab_size=None):
        if not window:
            raise ValueError("window: an accumulation window must hold at least one microbatch")
        if not 0 < eps <= 1 or (vocab_size is not None and not 0 <= mask_token_id < vocab_size):
            raise ValueError("eps must lie in (0, 1] and mask_token_id in the vocabulary")
        noised = []
        for batch in window:
            ids, targets, maskable, run_mask = eos_padding_rule(
                batch["input_ids"], batch.get("attention_mask"), batch.get("labels"), eos_token_id
            )
            _, masked, p_mask = forward_process(ids, mask_token_id, eps, maskable, generator)
            noised.append(dict(input_ids=ids, labels=targets, masked_indices=masked, p_mask=p_mask,
                               attention_mask=run_mask))
        return noised

    def window_count(self, window, *, average_tokens_across_devices=True, group=None):
        if not window:
            raise ValueError("window: an accumulation window must hold at least one microbatch")
        return sum(int(batch["masked_indices"].sum()) for batch in window)

    def microbatch_loss(self, model, noised, count=None):
        sum_loss, own_count = model(**noised).loss
        denominator = int(own_count) if count is None else count
        return sum_loss / max(denominator, 1)


def minimal_dataset(documents, config) -> GPTDatasetLike:
    return MinimalDataset(documents, config)


MINIMAL_LOSS: DiffusionLoss = MinimalLoss()
MINIMAL = Target(name="minimal", description="written against the Protocols only", expect="pass",
                 dataset=f"{HERE}:minimal_dataset", loss=f"{HERE}:MINIMAL_LOSS")


def test_the_minimal_targets_satisfy_the_protocols():
    factory: DatasetFactory = minimal_dataset
    assert isinstance(factory([np.array([1, 2, 0])], _config()), GPTDatasetLike)
    for name in ("prepare_window", "window_count", "microbatch_loss"):
        assert callable(getattr(MINIMAL_LOSS, name))


@pytest.mark.parametrize("prop", [p for p in PROPERTIES if p.applies_to(MINIMAL)], ids=lambda p: p.name)
def test_a_protocol_only_target_passes_every_property(prop):
    # Drawn examples only: what is checked is the contract, which any case exercises; the explicit
    # corners are impl's to pass in the suite (parity/suite).
    found = prop.hunt(MINIMAL.load(prop.interface), max_examples=3, shrink=False, explicit=False, target=MINIMAL)
    assert not found.found, found.message
    assert not found.crash, found.crash


def _config():
    from parity.dataset_config import GPTDatasetConfig

    return GPTDatasetConfig(sequence_length=2, vocab_size=3, eod_id=0)

