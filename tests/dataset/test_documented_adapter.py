"""The documented dataset adapter (docs/dataset.md, Adapting your own dataset) is complete: run as
written, it maps every config field.

The code block is taken from docs/dataset.md and executed with a stand-in for ``my_pkg.data.MyGPTDataset``
that takes its settings one by one (as a production class would) and serves through impl. A field
the adapter forgot would fall back to the stand-in's default and fail the properties on drawn configs.
"""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

from hypothesis import given, settings

from impl.dataset_config import GPTDatasetConfig
from impl.gpt_dataset import GPTDataset
from parity.strategies.dataset import dataset_cases
from parity.table.checks import dataset as properties
from parity.targets import Target

DOCUMENTED = Path(__file__).resolve().parents[2] / "docs" / "dataset.md"


def adapter_source() -> str:
    blocks = re.findall(r"```python\n(# my_pkg/parity_adapter.py\n.*?)```", DOCUMENTED.read_text(), flags=re.S)
    dataset_blocks = [block for block in blocks if "def my_dataset(" in block]
    assert len(dataset_blocks) == 1, "docs/dataset.md must hold one dataset adapter block (def my_dataset)"
    return dataset_blocks[0]


class MyGPTDataset(GPTDataset):
    """Settings one by one, each with a default a forgetful adapter would silently get."""

    def __init__(self, documents, seq_length, vocab_size=1 << 16, eod=0, pad=-1, add_extra_token=True,
                 reset_position_ids=False, reset_attention_mask=False, eod_mask_loss=False,
                 create_attention_mask=True, split="train", drop_last_partial_validation_sequence=True,
                 seed=1234, num_samples=None):
        super().__init__(documents, GPTDatasetConfig(
            sequence_length=seq_length, vocab_size=vocab_size, eod=eod, pad=pad, add_extra_token_to_sequence=add_extra_token,
            reset_position_ids=reset_position_ids, reset_attention_mask=reset_attention_mask,
            eod_mask_loss=eod_mask_loss, create_attention_mask=create_attention_mask, split=split,
            drop_last_partial_validation_sequence=drop_last_partial_validation_sequence, random_seed=seed,
            num_samples=num_samples,
        ))


def load_adapter(monkeypatch) -> types.ModuleType:
    package, data = types.ModuleType("my_pkg"), types.ModuleType("my_pkg.data")
    data.MyGPTDataset = MyGPTDataset
    package.data = data
    monkeypatch.setitem(sys.modules, "my_pkg", package)
    monkeypatch.setitem(sys.modules, "my_pkg.data", data)
    adapter = types.ModuleType("my_pkg.parity_adapter")
    exec(compile(adapter_source(), "docs/dataset.md", "exec"), adapter.__dict__)
    return adapter


def test_the_readme_adapter_maps_every_field(monkeypatch):
    adapter = load_adapter(monkeypatch)
    assert isinstance(adapter.TARGET, Target) and adapter.TARGET.dataset == "my_pkg.parity_adapter:my_dataset"

    @settings(max_examples=80, derandomize=True, database=None)
    @given(case=dataset_cases())
    def check(case):
        properties.check_matches_oracle(adapter.my_dataset, case)
        properties.check_indices_match_oracle(adapter.my_dataset, case)

    check()
