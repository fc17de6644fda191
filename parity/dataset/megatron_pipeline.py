"""megatron-core's data pipeline as a target: ``BlendedMegatronDatasetBuilder`` over files on disk
(docs/dataset.md, The pipeline).

This is the way Megatron users make their datasets: prefixes of ``.bin``/``.idx`` files, a blend of
them with weights, a split string such as ``"969,30,1"`` and the samples wanted per split, handed to
``BlendedMegatronDatasetBuilder(GPTDataset, sizes, is_built_on_rank, config).build()``, which gives
train, valid and test (each a ``BlendedDataset`` over one ``GPTDataset`` per prefix when there are
weights) and writes, or loads, their indices in ``path_to_cache``. Everything after the files is
megatron's own code; the harness only translates its config.

megatron's blended dataset asks ``torch.distributed`` for the rank whenever it has a cache folder, as
it always has in a training job; outside one, the build runs in a process group of one (Gloo, met
through a file in a fresh folder) that is taken down afterwards.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Sequence
from datetime import timedelta

from parity.dataset.megatron import fixed_class, import_megatron, megatron_config
from parity.targets import ConfigDeclined

#: How long a process group of one may take to form (it meets itself through a file).
GROUP_TIMEOUT = timedelta(seconds=60)


@contextlib.contextmanager
def process_group_of_one():
    """A Gloo process group of one rank while the block runs, unless one exists already."""
    import torch.distributed as dist

    if dist.is_initialized():
        yield
        return
    with tempfile.TemporaryDirectory(prefix="parity-group-") as folder:
        store = dist.FileStore(os.path.join(folder, "store"), 1)
        dist.init_process_group("gloo", store=store, rank=0, world_size=1, timeout=GROUP_TIMEOUT)
        try:
            yield
        finally:
            dist.destroy_process_group()


def build_splits(
    dataset_class, prefixes: Sequence[str], weights, split, sizes, config, path_to_cache: str, fast_cache_load: bool = False
) -> list:
    """``BlendedMegatronDatasetBuilder(dataset_class, sizes, ...).build()`` over the prefixes.

    ``split`` None builds every split from the whole of each prefix (megatron's ``blend_per_split``,
    the only form ``fast_cache_load`` accepts)."""
    gpt_dataset = import_megatron()
    from megatron.core.datasets.blended_megatron_dataset_builder import BlendedMegatronDatasetBuilder

    blend = (list(prefixes), None if weights is None else list(weights))
    placement = {"blend": blend, "split": split} if split is not None else {"blend_per_split": [blend] * 3}
    if fast_cache_load:
        if "fast_cache_load" not in gpt_dataset.GPTDatasetConfig.__dataclass_fields__:
            raise ConfigDeclined("this megatron-core has no fast_cache_load (it came in 0.16)")
        placement["fast_cache_load"] = True
    megatron = megatron_config(config, path_to_cache=path_to_cache, **placement)
    with process_group_of_one():
        return BlendedMegatronDatasetBuilder(dataset_class, list(sizes), lambda: True, megatron).build()


def megatron_pipeline(prefixes, weights, split, sizes, config, *, path_to_cache: str, fast_cache_load: bool = False):
    """The ``megatron-core`` pipeline: megatron's builder over its ``GPTDataset`` as installed."""
    return build_splits(import_megatron().GPTDataset, prefixes, weights, split, sizes, config, path_to_cache, fast_cache_load)


def fixed_megatron_pipeline(prefixes, weights, split, sizes, config, *, path_to_cache: str, fast_cache_load: bool = False):
    """The ``megatron-core:fixed`` pipeline: megatron's builder over the fixed ``GPTDataset`` (:func:`fixed_class`)."""
    return build_splits(fixed_class(), prefixes, weights, split, sizes, config, path_to_cache, fast_cache_load)
