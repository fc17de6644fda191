"""megatron-core's data pipeline, end to end: files, the builder, blends, splits and the index cache.

The pipeline properties of the table run against megatron's targets in tests/dataset/test_megatron.py
(their explicit examples) and here under ``long`` (drawn ones). These tests pin what the properties
rest on: the references against megatron's own split parser and C++ blending helper, the upstream
cache-key finding (and the fixed target's key without it), a second build in a fresh process and two ranks sharing one cache.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oracle.blend_reference import blending_indices, normalized, split_bookends
from parity.strategies.pipeline import PIPELINE_CASES, VARIATIONS, split_strings
from parity.table.checks import pipeline as properties
from parity.table.rows import PROPERTIES
from parity.targets import OPTIONAL_TARGETS

MEGATRON = next(t for t in OPTIONAL_TARGETS if t.name == "megatron-core")
FIXED = next(t for t in OPTIONAL_TARGETS if t.name == "megatron-core:fixed")
pytestmark = [
    pytest.mark.xdist_group("megatron"),
    pytest.mark.needs("megatron-core"),
]
PIPELINE_PROPERTIES = [prop for prop in PROPERTIES if prop.interface == "pipeline"]


@settings(max_examples=50, derandomize=True, database=None)
@given(split=split_strings())
def test_the_split_reference_is_megatrons_split_matrix(split):
    from megatron.core.datasets.blended_megatron_dataset_config import (
        convert_split_vector_to_split_matrix,
        parse_and_normalize_split,
    )

    assert split_bookends(split) == convert_split_vector_to_split_matrix(parse_and_normalize_split(split))


@settings(max_examples=50, derandomize=True, database=None)
@given(weights=st.lists(st.floats(0.01, 100), min_size=1, max_size=5), size=st.integers(0, 300))
def test_the_blend_reference_is_megatrons_helper(weights, size):
    from megatron.core.datasets import helpers

    dataset_index, dataset_sample_index = np.zeros(size, dtype=np.int16), np.zeros(size, dtype=np.int64)
    shares = normalized(normalized(weights))  # what megatron's BlendedDataset hands its helper
    helpers.build_blending_indices(dataset_index, dataset_sample_index, shares, len(weights), size, False)
    assert (dataset_index.tolist(), dataset_sample_index.tolist()) == blending_indices(weights, size)


@pytest.mark.parametrize(
    "variation", ["add_extra_token", pytest.param("drop_last_partial_validation_sequence", marks=pytest.mark.long)]
)
def test_megatrons_cache_key_leaves_out_settings_that_change_the_indices(variation):
    """An upstream finding, on every release the harness supports: the description megatron hashes for
    its cache files holds the seed, the sequence length, the sample count, the split and the
    tokenizer, not ``add_extra_token_to_sequence`` nor ``drop_last_partial_validation_sequence``, so
    a run that changes either loads the other's sample index: flagged, with the files and the field named.
    ``megatron-core:fixed``'s key holds both (parity.dataset.megatron.INDEX_SETTINGS_OUTSIDE_THE_KEY)."""
    with pytest.raises(AssertionError) as failure:
        properties.check_cache_key_separates_configs(MEGATRON.load("pipeline"), PIPELINE_CASES[0], variation)
    message = str(failure.value)
    assert message.startswith("the index cache is shared by configs that must not share it: the configs differ in " + variation)
    assert "-GPTDataset-valid-sample_index.npy" in message and "written for the first" in message


@pytest.mark.long
@pytest.mark.parametrize("variation", VARIATIONS)
def test_every_setting_in_the_fixed_cache_key_keeps_configs_apart(variation):
    properties.check_cache_key_separates_configs(FIXED.load("pipeline"), PIPELINE_CASES[0], variation)


@pytest.mark.long
@pytest.mark.parametrize("prop", PIPELINE_PROPERTIES, ids=lambda p: p.name)
@pytest.mark.parametrize("target", [MEGATRON, FIXED], ids=lambda t: t.name)
def test_drawn_pipelines(prop, target):
    """The drawn search of each pipeline property: the fixed target passes, the unpatched one fails the
    properties that list it."""
    found = prop.hunt(target.load("pipeline"), max_examples=25, shrink=False, target=target)
    assert not found.crash or any(known in found.crash_signature for known in target.known_crashes), found.crash
    assert found.found == (target.name in prop.catches), found.message
