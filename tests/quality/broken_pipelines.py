"""Pipelines broken in one place only: megatron's builder over the copy-on-FILL ``GPTDataset``, with one
planted defect each (loaded by name as ``tests.quality.broken_pipelines:NAME``).

* ``wrong_cache_key``: the description megatron hashes for its cache files leaves out the seed, so
  configs that differ only in it share their indices;
* ``blend_off_by_one``: the last sample of each blended split is the one before it of the same dataset;
* ``split_off_by_one``: train is built from one document fewer of each prefix than the split string gives it.
"""

from __future__ import annotations

import functools

import numpy as np

from parity.dataset.megatron import fixed_class
from parity.dataset.megatron_pipeline import build_splits


@functools.cache
def _broken_class(defect: str) -> type:
    """The copy-on-FILL ``GPTDataset`` with ``defect``; its name stays ``GPTDataset``, as megatron's."""
    fixed = fixed_class()
    if defect == "wrong_cache_key":
        keys = staticmethod(lambda: [key for key in fixed._key_config_attributes() if key != "random_seed"])
        return type("GPTDataset", (fixed,), {"_key_config_attributes": keys, "__module__": __name__})

    def __init__(self, dataset, dataset_path, indices, num_samples, index_split, config):
        if index_split.name == "train" and indices is not None and len(indices) > 1:
            indices = indices[:-1]
        fixed.__init__(self, dataset, dataset_path, indices, num_samples, index_split, config)

    return type("GPTDataset", (fixed,), {"__init__": __init__, "__module__": __name__})


def wrong_cache_key(prefixes, weights, split, sizes, config, *, path_to_cache, fast_cache_load=False):
    return build_splits(_broken_class("wrong_cache_key"), prefixes, weights, split, sizes, config, path_to_cache, fast_cache_load)


def split_off_by_one(prefixes, weights, split, sizes, config, *, path_to_cache, fast_cache_load=False):
    return build_splits(
        _broken_class("split_off_by_one"), prefixes, weights, split, sizes, config, path_to_cache, fast_cache_load
    )


def blend_off_by_one(prefixes, weights, split, sizes, config, *, path_to_cache, fast_cache_load=False):
    splits = build_splits(fixed_class(), prefixes, weights, split, sizes, config, path_to_cache, fast_cache_load)
    for blended in splits:
        if hasattr(blended, "dataset_sample_index") and blended.dataset_sample_index[-1] > 0:
            shifted = np.array(blended.dataset_sample_index)
            shifted[-1] -= 1
            blended.dataset_sample_index = shifted
    return splits
