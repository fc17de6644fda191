"""impl's own dataset config, and the translation its targets make from the harness's.

impl depends on nothing of the harness (tests/test_oracle_independence.py), so it has its own
config with megatron-core's names; its targets translate the harness's config field by field
(parity/dataset/impl.py), as any outside adapter does.
"""

from __future__ import annotations

from dataclasses import fields

import pytest

from impl.dataset_config import GPTDatasetConfig as ImplConfig
from parity.dataset.impl import impl_config
from parity.dataset_config import GPTDatasetConfig

VALID = dict(sequence_length=4, vocab_size=10, eod=0)


@pytest.mark.parametrize(
    ("override", "field"),
    [
        ({"sequence_length": 0}, "sequence_length"),
        ({"vocab_size": 0}, "vocab_size"),
        ({"eod": 10}, "eod"),
        ({"pad": 0}, "pad"),  # equal to the EOD id
        ({"pad": -2}, "pad"),
        ({"split": "validation"}, "split"),
        ({"random_seed": 2**32}, "random_seed"),
        ({"num_epochs": 0}, "num_epochs"),
        ({"num_samples": 0}, "num_samples"),
    ],
)
def test_impl_names_a_bad_field(override, field):
    with pytest.raises(ValueError, match=rf"^{field} must"):
        ImplConfig(**{**VALID, **override})


def test_the_translation_reads_every_field_of_the_harness_config():
    config = GPTDatasetConfig(sequence_length=3, vocab_size=9, eod_id=2, pad_id=5, add_extra_token=False,
                              reset_position_ids=True, create_attention_mask=False, split="valid",
                              drop_last_partial_validation_sequence=False, random_seed=7, num_samples=4)
    read = set()

    class Recording:
        def __getattr__(self, name):
            read.add(name)
            return getattr(config, name)

    assert impl_config(Recording()) == ImplConfig(
        sequence_length=3, vocab_size=9, eod=2, pad=5, add_extra_token_to_sequence=False, reset_position_ids=True,
        create_attention_mask=False, split="valid", drop_last_partial_validation_sequence=False, random_seed=7,
        num_samples=4,
    )
    assert read == {field.name for field in fields(GPTDatasetConfig)}
