"""Self-check of the suite: every known bug fails the properties that must catch it, and quickly.

Read from the property table's ``catches`` (parity.table.rows), so a new entry is checked with
no other edit. The default run keeps a cheap proof: the entry's explicit examples (the upstream
triggers) and then a short derandomized search, stopping at the first counterexample. How fast the
random search alone finds each bug (medians over seeds, with shrinking) is what ``python -m parity
bench`` measures; under the ``nightly`` profile the random-search hunts below run here too.
These check the harness, not a target: they run in the default session and skip under another
``--parity-target``.
"""

from __future__ import annotations

import pytest
from hypothesis import settings

from parity.table.rows import PROPERTIES, Property
from parity.targets import builtin_targets

#: Examples a random-search hunt may take before the bug counts as missed (nightly only).
HUNT_EXAMPLES = 200

pytestmark = pytest.mark.usefixtures("harness_self_check")


def _pairs() -> list:
    """(property, known bug) for every bug a property must catch; megatron's on one xdist worker,
    since importing megatron costs seconds once per process."""
    return [
        pytest.param(prop, bug, id=f"{prop.name}-catches-{bug}",
                     marks=[*([pytest.mark.xdist_group("megatron"), pytest.mark.needs("megatron-core")]
                              if bug.startswith("megatron") else []),
                            # a launch of ranks an example; the default run catches it in tests/causal/test_loops.py
                            *([pytest.mark.long] if prop.interface == "loop" else [])])
        for prop in PROPERTIES
        for bug in prop.catches
    ]


def _bug_target(name: str):
    target = builtin_targets().get(name)
    if target is None:
        pytest.skip(f"{name} is not available here (an optional target whose package is not installed)")
    assert target.is_known_bug, f"{name} is listed as a known bug but expected to {target.expect}"
    return target


@pytest.mark.parametrize(("prop", "bug"), _pairs())
def test_the_property_catches_the_known_bug(prop: Property, bug: str, record_property):
    target = _bug_target(bug)
    found = prop.hunt(target.load(prop.interface), max_examples=settings.default.max_examples, shrink=False,
                      target=target)
    for key, value in found.as_report().items():
        record_property(key, value)
    assert found.found, f"{prop.name} did not catch {bug} in its explicit examples and {settings.default.max_examples} drawn ones"


@pytest.mark.parametrize(("prop", "bug"), [p for p in _pairs() if p.values[0].hunted])
def test_random_search_alone_finds_the_known_bug(prop: Property, bug: str, record_property):
    """Without the explicit examples, shrunk: the figures bench reports (nightly profile only)."""
    if settings.default.max_examples < 1000:
        pytest.skip("a hunt from the bare strategies: nightly profile (or python -m parity bench)")
    target = _bug_target(bug)
    found = prop.hunt(target.load(prop.interface), max_examples=HUNT_EXAMPLES, explicit=False, target=target)
    for key, value in found.as_report().items():
        record_property(key, value)
    print(f"\n{bug} / {prop.name}:", *(f"  {k}: {v}" for k, v in found.as_report().items()), sep="\n")
    assert found.found, f"{HUNT_EXAMPLES} random examples of {prop.name} did not catch {bug}"


def test_single_microbatch_windows_are_a_control():
    """The local-mean bug needs two microbatches in a window: with one, it holds parity like impl (whose
    run of the same property is the suite's, parity/suite)."""
    (control,) = [prop for prop in PROPERTIES if prop.name == "diffusion/single-microbatch-control"]
    found = control.hunt(builtin_targets()["known-bug:local-mean"].load("loss"), max_examples=3, shrink=False)
    assert not found.found, found.message
