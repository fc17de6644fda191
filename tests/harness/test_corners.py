"""Every corner a strategy declares is in the default run, and the random search can reach it too.

A strategy declares its corners as the values of its ``SWITCHES`` (the dataset's in ``dataset_corners``), reads them off a case
with ``realized_switches`` and labels every drawn case with them through ``hypothesis.event``
(``pytest --hypothesis-show-statistics`` shows them); ``corner_cases()`` are the explicit examples
built from a covering array over them (parity/strategies/covering.py). Checked here, per module:

* the corner cases realize their rows, and together every pair of values and every required
  combination (so a corner is reached on purpose, not by the builder's luck);
* in the default run: every declared value occurs in the explicit examples of the table's
  properties that draw this module's cases, or among the labels of 25 draws of its strategy under
  the ``ci`` profile's settings (derandomized: the same draws every run);
* the random search alone labels every declared value within 200 draws (100 windows; the required
  combinations are the corner cases' job: the dataset search draws the cached path, all mask
  switches off, most often, because that is where the cache bug lives);
* each label the strategy emits is the case's realized value.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, Phase, given, settings

from parity.strategies import dataset, dataset_corners, diffusion
from parity.strategies.covering import covering_array, covers, every_combination, labels, requirements
from parity.table.rows import PROPERTIES

#: name: (the module declaring its corners, the strategy module labelling its draws, its default strategy, the
#: interface of the properties that draw its cases)
MODULES = {
    "dataset": (dataset_corners, dataset, dataset.dataset_cases, "dataset"),
    "windows": (diffusion, diffusion, diffusion.window_cases, "loss"),
}
#: Draws in which the random search alone must reach every corner (a window case costs more).
SEARCH_EXAMPLES = {"dataset": 200, "windows": 100}


def drawn_labels(drawing, strategy, examples: int, profile: settings, monkeypatch) -> tuple[set[str], list]:
    """The event labels of ``examples`` draws, and the drawn cases."""
    seen, cases = set(), []
    monkeypatch.setattr(drawing, "event", seen.add)

    @settings(profile, max_examples=examples, phases=[Phase.generate], database=None,
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def draw(case):
        cases.append(case)

    draw()
    return seen, cases


def label_set(module, case) -> set[str]:
    return set(labels(module.realized_switches(case)))


def declared_labels(module) -> set[str]:
    return {label for name, values in module.SWITCHES.items() for value in values for label in labels({name: value})}


def explicit_cases(module, interface: str) -> list:
    """The cases of this module's type among the explicit examples of the table's properties."""
    case_type = type(module.corner_cases()[0])
    found = []
    for prop in (prop for prop in PROPERTIES if prop.interface == interface):
        for example in prop.explicit_examples():
            for value in example.values():
                found += [item for item in (value if isinstance(value, tuple) else (value,)) if isinstance(item, case_type)]
    return found


def test_a_covering_array_holds_every_pair_and_every_required_combination():
    switches = {"a": (0, 1, 2), "b": (0, 1), "c": (0, 1), "d": ("x", "y")}
    required = every_combination(switches, "b", "c", "d")
    possible = lambda row: not (row.get("a") == 2 and row.get("d") == "y")  # noqa: E731
    rows = covering_array(switches, required, possible)
    assert all(possible(row) and set(row) == set(switches) for row in rows)
    wanted = requirements(switches, required, possible)
    assert {"a": 2, "d": "y"} not in wanted and {"a": 2, "d": "x"} in wanted and required[0] in wanted
    assert all(any(covers(row, combination) for row in rows) for combination in wanted)
    assert len(rows) < 3 * 2 * 2 * 2


@pytest.mark.parametrize("name", sorted(MODULES))
def test_the_corner_cases_realize_a_covering_array(name):
    module, _, _, _ = MODULES[name]
    rows = covering_array(module.SWITCHES, module.REQUIRED, module.possible)
    realized = [module.realized_switches(case) for case in module.corner_cases()]
    assert realized == rows, "a corner case does not realize its row"
    for combination in requirements(module.SWITCHES, module.REQUIRED, module.possible):
        assert any(covers(row, combination) for row in realized), f"no corner case holds {combination}"


@pytest.mark.parametrize("name", sorted(MODULES))
def test_every_declared_corner_is_in_the_default_run(name, monkeypatch):
    module, drawing, strategy, interface = MODULES[name]
    explicit = set().union(*(label_set(module, case) for case in explicit_cases(module, interface)))
    searched, _ = drawn_labels(drawing, strategy(), 25, settings.get_profile("ci"), monkeypatch)
    assert explicit | searched <= declared_labels(module), "a realized value is not declared in SWITCHES"
    missing = declared_labels(module) - explicit - searched
    assert not missing, f"never in the default run: {sorted(missing)}"


@pytest.mark.parametrize("name", sorted(MODULES))
def test_the_random_search_alone_reaches_every_corner(name, monkeypatch):
    module, drawing, strategy, _ = MODULES[name]
    searched, cases = drawn_labels(drawing, strategy(), SEARCH_EXAMPLES[name], settings(derandomize=True), monkeypatch)
    missing = declared_labels(module) - searched
    assert not missing, f"never drawn in {SEARCH_EXAMPLES[name]} cases: {sorted(missing)}"
    assert label_set(module, cases[-1]) <= searched, "the labels are not the drawn cases' realized values"


@pytest.mark.parametrize("name", sorted(MODULES))
def test_each_label_is_a_realized_value(name, monkeypatch):
    module, drawing, strategy, _ = MODULES[name]
    searched, (case,) = drawn_labels(drawing, strategy(), 1, settings(derandomize=True), monkeypatch)
    assert searched == label_set(module, case)
