"""The dataset properties (docs/dataset.md), run against the selected target (``pytest --target NAME``).

The required properties (oracle in any serve order, resume, DataLoader workers, indices) decide
the verdict: every dataset target must pass them, the known bugs (``known-bug:cache-*`` and an
unpatched ``megatron-core``) must fail them. Aliasing is a hazard: required for a target that
promises copies (``impl``), reported for the others. The checks themselves live in
``properties.py`` so that ``tests/quality`` and ``python -m parity bench`` run exactly the same
code when they measure how fast the bugs are found.
"""

from __future__ import annotations

import warnings
from dataclasses import replace

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from parity.dataset_compare import AliasingHazard
from tests.dataset import properties
from tests.dataset.strategies import (
    EDITS,
    MOCK_DATA_CASE,
    UPSTREAM_PR_CASE,
    dataset_cases,
    resumed_cases,
    small_dataset_cases,
)

# The explicit examples are the documented triggers (docs/dataset.md, The cache bug), so every known-bug target fails
# each property deterministically, whatever the random draws find besides.


@given(case=dataset_cases())
@example(case=UPSTREAM_PR_CASE)
@example(case=MOCK_DATA_CASE)
def test_every_sample_matches_the_oracle_in_any_serve_order(dataset_factory, case):
    properties.check_matches_oracle(dataset_factory, case)


@given(case_and_start=resumed_cases())
@example(case_and_start=(MOCK_DATA_CASE, 1))
def test_a_resumed_run_serves_what_a_fresh_run_served(dataset_factory, case_and_start):
    properties.check_resume_agrees(dataset_factory, *case_and_start)


@given(case=dataset_cases(), edit=st.sampled_from(EDITS))
@example(case=MOCK_DATA_CASE, edit="add_one")
def test_editing_a_served_tensor_in_place_changes_nothing_else(target, dataset_factory, case, edit):
    """Required where the target promises copies; elsewhere the aliasing test below reports it."""
    if not target.promises_copies:
        pytest.skip(f"{target.name} does not promise copies: aliasing is reported as a hazard instead")
    properties.check_edits_do_not_leak(dataset_factory, case, edit)


HAZARDS_SEEN: dict[str, set[str]] = {}


@given(case=dataset_cases())
@example(case=MOCK_DATA_CASE)
def test_aliasing_hazards_are_named(target, dataset_factory, case):
    """No returned tensor shares storage with another key or an earlier sample. A hazard fails
    this test for a target that promises copies; for the others it is reported (an
    ``AliasingHazard`` warning in the summary, once per kind) and the test passes."""
    hazards = properties.find_aliasing_hazards(dataset_factory, case)
    if target.promises_copies:
        assert not hazards, f"{target.name} promises copies, but: " + "; ".join(hazards)
        return
    fresh = [h for h in hazards if h.split(" (dataset[")[0] not in HAZARDS_SEEN.setdefault(target.name, set())]
    for hazard in fresh:
        HAZARDS_SEEN[target.name].add(hazard.split(" (dataset[")[0])
        warnings.warn(AliasingHazard(f"{target.name}: {hazard}"), stacklevel=1)


@pytest.mark.slow
@given(case=small_dataset_cases, batch_size=st.integers(1, 4))
@example(case=replace(MOCK_DATA_CASE, serve_order=()), batch_size=2)  # each worker fills its own cache
def test_a_two_worker_dataloader_yields_the_oracle_batches(dataset_factory, case, batch_size):
    properties.check_dataloader_matches_oracle(dataset_factory, case, batch_size)


@given(case=dataset_cases())
@example(case=UPSTREAM_PR_CASE)
def test_the_index_arrays_equal_the_reference_builder(dataset_factory, case):
    properties.check_indices_match_oracle(dataset_factory, case)
