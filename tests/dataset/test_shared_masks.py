"""impl shares its token-independent masks write-protected (docs/dataset.md, Shared masks), and the
aliasing check tells the three cases apart: a copy per sample, a shared tensor that refuses writes (no
hazard), a shared writable one (a hazard, and an edit that leaks)."""

from __future__ import annotations

import pytest
import torch
from torch.utils.data import DataLoader

from impl.gpt_dataset import GPTDataset, SampleMasks
from parity.dataset.compare import aliasing_hazards, refuses_writes
from parity.dataset.impl import impl_config
from parity.strategies.dataset import MOCK_DATA_CASE, UPSTREAM_PR_CASE
from parity.table.checks import dataset as properties

CASE = UPSTREAM_PR_CASE


class CopiesEverything(GPTDataset):
    """The previous impl: every mask a copy of its own for every sample."""

    def _from_cache(self) -> SampleMasks:
        kept = self._cached_masks
        return SampleMasks(kept.loss_mask.clone(), kept.position_ids.clone(), kept.attention_mask.clone())


class SharesWritable(GPTDataset):
    """A planted writable share: the cached masks made outside inference mode, handed out by reference."""

    def _fill_cache(self, masks: SampleMasks) -> None:
        self._cached_masks = SampleMasks(masks.loss_mask.clone(), masks.position_ids.clone(), masks.attention_mask.clone())


def _built(dataset_class, case=CASE):
    return dataset_class(list(case.documents), impl_config(case.config))


def _factory(dataset_class):
    return lambda documents, config: dataset_class(documents, impl_config(config))


def _samples(dataset):
    return [(k, dataset[k]) for k in range(len(dataset))]


def test_impl_serves_one_shared_mask_that_refuses_in_place_edits():
    dataset = _built(GPTDataset)
    first, second, third = dataset[0], dataset[1], dataset[2]
    assert second["attention_mask"].data_ptr() == third["attention_mask"].data_ptr()
    assert second["position_ids"].data_ptr() == third["position_ids"].data_ptr()
    assert second["loss_mask"].data_ptr() != third["loss_mask"].data_ptr()  # each sample edits its own
    for key in ("attention_mask", "position_ids"):
        with pytest.raises(RuntimeError, match="Inplace update to inference tensor outside InferenceMode"):
            third[key].fill_(0)
        with pytest.raises(RuntimeError, match="Inplace update to inference tensor"):
            third[key][..., 0] = 1  # through a view too
        assert not refuses_writes(first[key])  # the first sample's own, computed before the cache held any
    third["loss_mask"].zero_()
    assert dataset[2]["loss_mask"].sum() > 0


def test_a_dataloader_collates_the_shared_masks_into_ordinary_tensors():
    dataset = _built(GPTDataset)
    dataset[0]
    for batch in DataLoader(dataset, batch_size=2, num_workers=0):
        assert not batch["attention_mask"].is_inference()
        batch["attention_mask"].logical_not_()  # the batch is the consumer's own
    assert not refuses_writes(torch.stack([dataset[1]["attention_mask"]]))


@pytest.mark.parametrize(("dataset_class", "hazards"), [
    (GPTDataset, []),
    (CopiesEverything, []),
    (SharesWritable, ["attention_mask(ref)", "position_ids(ref)"]),
], ids=["shared-write-protected", "copies", "shared-writable"])
def test_the_aliasing_check_tells_the_three_cases_apart(dataset_class, hazards):
    dataset = _built(dataset_class)
    assert [hazard.short for hazard in aliasing_hazards(_samples(dataset))] == hazards


def test_a_planted_writable_share_leaks_an_edit_and_is_caught():
    with pytest.raises(AssertionError, match=r"attention_mask differs|position_ids differs"):  # a later sample sees the edit
        properties.check_edits_do_not_leak(_factory(SharesWritable), MOCK_DATA_CASE, "add_one")
    with pytest.raises(AssertionError, match="promises copies"):
        properties.check_aliasing_hazards(_factory(SharesWritable), MOCK_DATA_CASE)
    properties.check_edits_do_not_leak(_factory(GPTDataset), MOCK_DATA_CASE, "add_one")
    assert properties.check_aliasing_hazards(_factory(GPTDataset), MOCK_DATA_CASE) == []
