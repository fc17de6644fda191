"""impl's dataset classes as dataset targets: the harness's config translated into impl's own.

impl is production code with its own config type (impl/dataset_config.py, megatron-core's names);
like any outside adapter (README, "Adding your own implementation"), its targets map every field of
the harness's :class:`parity.dataset_config.GPTDatasetConfig` onto it.
"""

from __future__ import annotations

from impl import dataset_config
from impl.gpt_dataset import GPTDataset
from impl.known_bugs.cache_accumulate import CacheAccumulateGPTDataset
from impl.known_bugs.cache_alias import CacheAliasGPTDataset
from parity.dataset_config import GPTDatasetConfig


def impl_config(config: GPTDatasetConfig) -> dataset_config.GPTDatasetConfig:
    return dataset_config.GPTDatasetConfig(
        sequence_length=config.sequence_length,
        vocab_size=config.vocab_size,
        eod=config.eod_id,
        pad=config.pad_id,
        add_extra_token_to_sequence=config.add_extra_token,
        reset_position_ids=config.reset_position_ids,
        reset_attention_mask=config.reset_attention_mask,
        eod_mask_loss=config.eod_mask_loss,
        create_attention_mask=config.create_attention_mask,
        split=config.split,
        drop_last_partial_validation_sequence=config.drop_last_partial_validation_sequence,
        random_seed=config.random_seed,
        num_epochs=config.num_epochs,
        num_samples=config.num_samples,
    )


def impl_dataset(documents, config: GPTDatasetConfig) -> GPTDataset:
    return GPTDataset(documents, impl_config(config))


def cache_alias_dataset(documents, config: GPTDatasetConfig) -> CacheAliasGPTDataset:
    return CacheAliasGPTDataset(documents, impl_config(config))


def cache_accumulate_dataset(documents, config: GPTDatasetConfig) -> CacheAccumulateGPTDataset:
    return CacheAccumulateGPTDataset(documents, impl_config(config))


def rare_corner_dataset(documents, config: GPTDatasetConfig):
    from impl.planted.rare_corner import RareCornerGPTDataset

    return RareCornerGPTDataset(documents, impl_config(config))
