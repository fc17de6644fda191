"""The older upstream cache, kept as the ``known-bug:cache-accumulate`` target.

As :mod:`impl.known_bugs.cache_alias`, and HIT also hands out the cached loss mask itself: every
served sample masks its padding into the one shared tensor, so the padding of all samples served so
far accumulates in it.
"""

from __future__ import annotations

from impl.gpt_dataset import SampleMasks
from impl.known_bugs.cache_alias import CacheAliasGPTDataset


class CacheAccumulateGPTDataset(CacheAliasGPTDataset):
    def _from_cache(self) -> SampleMasks:
        return self._cached_masks
