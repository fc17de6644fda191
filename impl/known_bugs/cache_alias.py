"""Upstream's pre-fix cache (docs/dataset.md, The cache bug), kept as the ``known-bug:cache-alias`` target.

FILL stores the first sample's masks by reference, so that sample's in-place pad masking writes its
padding into the cache, and every later sample inherits it. HIT clones the loss mask but hands out
the cached attention mask and position ids themselves, so an in-place edit by one consumer reaches
every later sample.
"""

from __future__ import annotations

from impl.gpt_dataset import GPTDataset, SampleMasks


class CacheAliasGPTDataset(GPTDataset):
    def _fill_cache(self, masks: SampleMasks) -> None:
        self._cached_masks = masks

    def _from_cache(self) -> SampleMasks:
        cached = self._cached_masks
        return SampleMasks(
            loss_mask=cached.loss_mask.clone(),
            position_ids=cached.position_ids,
            attention_mask=cached.attention_mask,
        )
