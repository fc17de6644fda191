"""megatron-core's own GPTDataset, checked on every CI run (skipped when it is not installed).

Cheap proofs, on one xdist worker (importing megatron costs seconds once per process): the
installed package fails the required properties and Hypothesis shrinks the trigger; the copy-on-FILL
fix passes them with its aliasing hazards named; its indices are the reference builder's and
impl's; its index crash is reported as a crash; a config it cannot express is declined. How *fast*
the random search finds the bug is measured by ``python -m parity bench``, not here.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, reject, settings

from parity.dataset_config import GPTDatasetConfig
from parity.safety.crash import TargetCrashed
from parity.strategies.dataset import (
    MEGATRON_CRASH_CASE,
    MOCK_DATA_CASE,
    UPSTREAM_PR_CASE,
    dataset_cases,
)
from parity.table.checks import dataset as properties
from parity.table.rows import PROPERTIES, catching
from parity.targets import OPTIONAL_TARGETS, ConfigDeclined, get_target

MEGATRON = next(t for t in OPTIONAL_TARGETS if t.name == "megatron-core")
FIXED = next(t for t in OPTIONAL_TARGETS if t.name == "megatron-core:fixed")
pytestmark = [
    pytest.mark.xdist_group("megatron"),
    pytest.mark.needs("megatron-core"),
]


@pytest.fixture(scope="module")
def unpatched():
    return get_target("megatron-core").load("dataset")


@pytest.fixture(scope="module")
def fixed():
    return get_target("megatron-core:fixed").load("dataset")


@pytest.mark.parametrize("prop", [p for p in catching("megatron-core") if p.hunted], ids=lambda p: p.name)
def test_unpatched_megatron_fails_the_required_properties_with_a_shrunk_trigger(unpatched, prop):
    """Random search alone (the upstream cases are the table's explicit examples, checked in tests/quality)."""
    found = prop.hunt(unpatched, max_examples=60, explicit=False)
    assert found.found, f"{prop.name}: 60 derandomized examples did not catch megatron-core's cache bug"
    assert "loss_mask differs" in found.message, found.message
    print(f"\nmegatron-core / {prop.name}: found after {found.examples_to_failure} example(s); shrunk to {found.counterexample}")


#: Examples per required property for the fixed target, beyond the explicit ones: the two-worker
#: DataLoader one is slow, the file and pipeline ones write files (drawn pipelines: tests/dataset/test_megatron_pipeline.py).
FIXED_EXAMPLES = {
    "dataset/dataloader-matches-oracle": 2,
    "dataset/files-match-oracle": 2,
    "dataset/files-indices-match-reference": 2,
    "causal/dataset-feeds-a-run": 1,  # a whole causal-LM Trainer run an example: the upstream trigger
}


#: 0.14 hands out the cached loss mask itself on a hit, so copy-on-FILL alone does not fix it there
#: (docs/dataset.md, Releases): the fixed targets are rightly flagged by the properties that catch the bug.
FIXED_BY_COPY_ON_FILL = not (MEGATRON.version or "").startswith("0.14.")


def flagged_on_this_release(prop, unpatched: str) -> bool:
    return not FIXED_BY_COPY_ON_FILL and unpatched in prop.catches


@pytest.mark.parametrize("prop", [p for p in PROPERTIES if p.applies_to(FIXED)],
                         ids=lambda p: p.name)
def test_fixed_megatron_passes_every_property(prop):
    """A crash is allowed only where it is megatron-core's known index crash (reported as a crash)."""
    examples = FIXED_EXAMPLES.get(prop.name, 1 if prop.interface == "pipeline" else 20)
    found = prop.hunt(FIXED.load(prop.interface), max_examples=examples, shrink=False, target=FIXED)
    assert found.found == flagged_on_this_release(prop, "megatron-core"), found.message
    assert not found.crash or any(known in found.crash_signature for known in FIXED.known_crashes), found.crash


@pytest.mark.skipif(not FIXED_BY_COPY_ON_FILL, reason="0.14: copy-on-FILL alone does not fix the cache")
def test_fixed_megatron_passes_the_upstream_cases_and_names_its_hazards(fixed):
    for case in (UPSTREAM_PR_CASE, MOCK_DATA_CASE):
        properties.check_matches_oracle(fixed, case)
        properties.check_resume_agrees(fixed, (case, case.length - 1))
    hazards = " | ".join(map(str, properties.find_aliasing_hazards(fixed, MOCK_DATA_CASE)))
    assert "labels and tokens share storage" in hazards
    assert "attention_mask is handed out by reference" in hazards
    assert "position_ids is handed out by reference" in hazards


def test_the_index_crash_is_reported_as_a_crash_not_a_mismatch(fixed):
    with pytest.raises(TargetCrashed, match=r"^the target raised AssertionError: .* at megatron/core/datasets/helpers\.py:\d+ "):
        properties.check_matches_oracle(fixed, MEGATRON_CRASH_CASE)
    # The same config is valid: impl and the oracle build it (the walk ends at offset -1).
    properties.check_matches_oracle(get_target("impl").load("dataset"), MEGATRON_CRASH_CASE)


@settings(max_examples=30, derandomize=True, database=None)
@given(case=dataset_cases())
def test_impl_builds_megatrons_indices(unpatched, case):
    if case.config.num_epochs is not None:
        reject()
    impl = get_target("impl").load("dataset")(list(case.documents), case.config)
    try:
        megatron = unpatched(list(case.documents), case.config)
    except AssertionError:
        reject()
    for name in ("document_index", "sample_index", "shuffle_index"):
        assert np.array_equal(np.asarray(getattr(megatron, name)), getattr(impl, name)), name


def test_num_epochs_is_declined(unpatched):
    with pytest.raises(ConfigDeclined, match="no num_epochs"):
        unpatched(list(UPSTREAM_PR_CASE.documents), GPTDatasetConfig(sequence_length=4, vocab_size=10, eod_id=0, num_epochs=1))


def test_the_version_is_the_installed_one():
    from importlib.metadata import version

    assert get_target("megatron-core").version == version("megatron-core")


MOCK_FIXED = next(t for t in OPTIONAL_TARGETS if t.name == "megatron-core:mock:fixed")


@pytest.mark.parametrize("prop", [p for p in PROPERTIES if p.applies_to(MOCK_FIXED)], ids=lambda p: p.name)
def test_fixed_mock_data_passes_every_property_that_applies(prop):
    """megatron's MockGPTDataset with copy-on-FILL; the unpatched one is caught (tests/quality)."""
    found = prop.hunt(MOCK_FIXED.load("mock"), max_examples=10, shrink=False, target=MOCK_FIXED)
    assert found.found == flagged_on_this_release(prop, "megatron-core:mock"), found.message
    assert not found.crash or any(known in found.crash_signature for known in MOCK_FIXED.known_crashes), found.crash


def test_the_mock_target_declines_documents_that_are_not_megatrons_ramps():
    with pytest.raises(ConfigDeclined, match="not megatron's mock ramp"):
        get_target("megatron-core:mock").load("mock")(list(UPSTREAM_PR_CASE.documents), UPSTREAM_PR_CASE.config)
