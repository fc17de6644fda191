"""The report cannot say "holds" over a broken impl: its ``properties`` scenario runs the table.

Each deliberately broken copy of impl (a pre-fix behaviour presented as if it were the production
code, expected to pass) must turn its column red, so ``python -m parity`` exits 1.
"""

from __future__ import annotations

import pytest

from parity.report.scenarios import Options
from parity.table.scenario import properties_scenario
from parity.targets import Target

BROKEN = {
    "dataset": "parity.dataset.impl:cache_alias_dataset",
    "loss": "impl.known_bugs.local_mean:LOCAL_MEAN_LOSS",
    "trainer": "impl.known_bugs.logits_local_mean_trainer:LogitsLocalMeanTrainer",
}


@pytest.mark.parametrize("interface", sorted(BROKEN))
def test_a_broken_impl_fails_the_properties_scenario(interface):
    broken = Target(name="broken-impl", description="impl with a pre-fix behaviour", expect="pass",
                    **{interface: BROKEN[interface]})
    (column,) = properties_scenario([broken], Options(examples=1), lambda message: None).columns
    assert not column.holds and not column.as_expected, column.figures
    assert any(cell.startswith("FAILS") for cell in column.figures.values())
    assert column.verdict == "outside budget (UNEXPECTED)"
