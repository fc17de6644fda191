"""Self-check of the pipeline properties: a planted defect in megatron's pipeline is caught on purpose.

For each pipeline of tests/quality/broken_pipelines.py (a cache key without the seed, a blend one
sample off, a split one document off), the property that holds that part of the pipeline to its
reference must catch it in one of its explicit examples, as the default run runs them, and name it.
"""

from __future__ import annotations

import pytest
from hypothesis import settings

from parity.table.rows import PROPERTIES
from parity.targets import Target

pytestmark = [
    pytest.mark.usefixtures("harness_self_check"),
    pytest.mark.xdist_group("megatron"),
    pytest.mark.needs("megatron-core"),
]

DEFECTS = {
    "wrong_cache_key": ("pipeline/cache-key-separates-configs", "the configs differ in random_seed"),
    "blend_off_by_one": (
        "pipeline/blend-matches-reference",
        "dataset_sample_index differs from the reference at 1 blended index",
    ),
    "split_off_by_one": ("pipeline/splits-match-reference", "train of prefix 0"),
}


@pytest.mark.parametrize("defect", sorted(DEFECTS))
def test_the_property_catches_the_planted_defect_on_purpose(defect):
    name, words = DEFECTS[defect]
    (prop,) = [prop for prop in PROPERTIES if prop.name == name]
    target = Target(
        name=f"broken:{defect}",
        description=f"megatron's pipeline with {defect}",
        expect="fail",
        pipeline=f"tests.quality.broken_pipelines:{defect}",
    )
    found = prop.hunt(target.load("pipeline"), max_examples=settings.default.max_examples, shrink=False, target=target)
    assert found.found, f"{name} did not catch {defect}"
    assert found.examples_to_failure <= len(prop.explicit_examples()), f"{name} caught {defect} only in a drawn example"
    assert words in found.message, found.message
