"""Self-check of the coverage: a dataset broken in one corner only fails the default run and the report.

For each dataset of tests/quality/broken_datasets.py (one mask-switch setting, one split with one
value of the drop flag, one kind of exact boundary): the table's dataset properties, run as the
default run runs them (explicit examples, then the profile's drawn ones, stopping at the first
counterexample, as tests/quality/test_known_bugs_are_caught.py hunts), must catch it in an explicit
example, i.e. on purpose and not by a lucky draw; and the report's ``properties`` scenario must
show it failing.
"""

from __future__ import annotations

import pytest
from hypothesis import settings

from parity.report.scenarios import Options
from parity.table.rows import PROPERTIES
from parity.table.scenario import properties_scenario
from parity.targets import Target
from tests.quality.broken_datasets import BROKEN

pytestmark = pytest.mark.usefixtures("harness_self_check")


def broken(name: str) -> Target:
    # Expected to fail, so the report stops at the first property that catches it, as for a known bug.
    return Target(name=f"broken:{name}", description=f"impl broken in the corner {name}", expect="fail",
                  dataset=f"tests.quality.broken_datasets:{name}")


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_the_default_run_catches_it_on_purpose(name):
    target = broken(name)
    for prop in (prop for prop in PROPERTIES if prop.applies_to(target)):
        found = prop.hunt(target.load("dataset"), max_examples=settings.default.max_examples, shrink=False, target=target)
        assert not found.crash, found.crash
        if found.found:
            explicit = len(prop.explicit_examples())
            assert found.examples_to_failure <= explicit, (
                f"{prop.name} caught it only at drawn example {found.examples_to_failure - explicit}, not in an explicit one"
            )
            return
    pytest.fail(f"no dataset property of the table catches the dataset broken in the corner {name}")


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_the_report_catches_it(name):
    (column,) = properties_scenario([broken(name)], Options(), lambda message: None).columns
    assert not column.holds and any(cell.startswith("FAILS") for cell in column.figures.values()), column.figures
