"""A property added as one table entry reaches pytest, the known-bug checks, bench and the report.

Shown with a throwaway entry and two throwaway targets, defined here and nowhere else: nothing but
the table is patched.
"""

from __future__ import annotations

import importlib
import sys
import types

import pytest
from hypothesis import settings
from hypothesis import strategies as st

import parity.table.rows as table
from parity.compare import KINDS, ParityFailure
from parity.fleet.bench import hunt_known_bugs
from parity.report.scenarios import Options
from parity.suite.collect import ParityNote
from parity.suite.outcomes import running
from parity.table.rows import PROPERTIES, Property
from parity.table.scenario import properties_scenario
from parity.targets import Target

HERE = __name__


def even_arguments():
    return {"n": st.integers(0, 50)}


EVEN_EXAMPLES = ({"n": 35},)


def check_doubling_is_even(double, n, target=None):
    """Doubling gives an even number."""
    assert double(n) % 2 == 0, f"double({n}) = {double(n)} is odd"
    if n % 7 == 0 and target is not None and target.name == "throwaway:good":
        return [f"{n} is a multiple of seven"]  # a note beside a passing verdict, like a hazard
    return None


def double(n):
    return 2 * n


def double_wrong_on_multiples_of_five(n):
    return 2 * n + (n % 5 == 0)


THROWAWAY = Property(
    name="harness/throwaway-doubling-is-even",
    interface="dataset",
    check=f"{HERE}:check_doubling_is_even",
    arguments=even_arguments,
    examples=lambda: EVEN_EXAMPLES,
    catches=("throwaway:bug",),
    hunted=True,
)
GOOD = Target(name="throwaway:good", description="doubles", expect="pass", dataset=f"{HERE}:double")
BUG = Target(name="throwaway:bug", description="odd on multiples of five", expect="fail",
             dataset=f"{HERE}:double_wrong_on_multiples_of_five")


@pytest.fixture
def with_throwaway(monkeypatch):
    monkeypatch.setattr(table, "PROPERTIES", (*table.PROPERTIES, THROWAWAY))
    monkeypatch.delitem(sys.modules, "parity.suite.test_properties", raising=False)
    return importlib.import_module("parity.suite.test_properties")


def test_the_entry_becomes_a_pytest_test_of_the_suite(with_throwaway, tmp_path):
    test = getattr(with_throwaway, THROWAWAY.test_name)
    assert test.__doc__ == "Doubling gives an even number."
    cache = types.SimpleNamespace(mkdir=lambda name: tmp_path / name)  # the run's cache folder, as pytest's cache plugin gives it
    config = types.SimpleNamespace(cache=cache)  # the run's config, as pytest's pytestconfig fixture gives it
    item = types.SimpleNamespace(stash={})  # the item whose examples are counted (parity/suite/outcomes.py)
    note = "throwaway:good: harness/throwaway-doubling-is-even: .* is a multiple of seven"
    with pytest.warns(ParityNote, match=note), running(item):
        test(target=GOOD, device="cpu", pytestconfig=config)  # notes are warnings beside a passing test
    assert not (tmp_path / "parity-failures").exists()
    (held,) = item.stash.values()  # the examples held, counted for the run's table
    assert 1 + 1 <= held <= 1 + settings.default.max_examples  # the explicit example and the profile's draws
    with pytest.raises(ParityFailure, match="is odd") as failure:
        test(target=BUG, device="cpu", pytestconfig=config)
    assert failure.value.verdict.failure_kinds == ["mismatch"]  # the record's kind names a plain assertion
    (kept,) = (tmp_path / "parity-failures").rglob("*.json")  # the failing example, as data, for python -m parity repro
    assert kept.parent.name == "throwaway_bug"


def test_the_entry_is_a_known_bug_check(with_throwaway):
    assert table.catching("throwaway:bug") == [THROWAWAY]
    explicit = THROWAWAY.hunt(BUG.load("dataset"), max_examples=10, shrink=False)
    assert explicit.examples_to_failure == 1  # the explicit example (35) catches it at once
    drawn = THROWAWAY.hunt(BUG.load("dataset"), max_examples=50, explicit=False)
    assert drawn.found and drawn.counterexample == "({'n': 0},)"  # shrunk to the smallest multiple of five
    assert not THROWAWAY.hunt(GOOD.load("dataset"), max_examples=20).found


def test_the_entry_is_hunted_by_bench(with_throwaway):
    (hunted,) = hunt_known_bugs([GOOD, BUG], seeds=2, max_examples=50, progress=lambda message: None)
    assert (hunted["target"], hunted["property"], hunted["found"]) == ("throwaway:bug", THROWAWAY.name, 2)
    assert hunted["runs"][0]["counterexample"] == "({'n': 0},)"  # random search alone, shrunk


def test_the_entry_is_a_row_of_the_report(with_throwaway, monkeypatch):
    monkeypatch.setattr(table, "PROPERTIES", (THROWAWAY,))  # the throwaway targets are no datasets: they crash on the others
    result = properties_scenario([GOOD, BUG], Options(examples=3), lambda message: None)
    good, bug = result.columns
    assert good.figures[THROWAWAY.name].startswith("holds: 1 corner, 3 drawn; note: ") and good.verdict == "within budget (ok)"
    assert bug.figures[THROWAWAY.name].startswith("FAILS at corner 1 of 1: mismatch: [mismatch] double(35)")
    assert bug.failures[THROWAWAY.name].startswith("mismatch:\n[mismatch] double(35) = 71 is odd")
    assert bug.verdict == "outside budget (caught)" and result.as_expected


def test_every_record_names_a_kind_a_verdict_knows():
    assert {prop.kind for prop in PROPERTIES} <= set(KINDS)
    assert {prop.name: prop.kind for prop in PROPERTIES if prop.kind != "mismatch"} == {
        "dataset/aliasing-hazards": "hazard",
        "pipeline/fast-cache-load-over-stale-files": "hazard",
        "noise/draws-match-oracle": "noise",
        "noise/masked-fraction-follows-p": "noise",
    }


def test_a_crash_in_a_target_is_a_crashed_cell(with_throwaway, monkeypatch):
    def crashing(n):
        raise RuntimeError("index helper failed")

    monkeypatch.setattr(sys.modules[HERE], "double", crashing)
    (column,) = properties_scenario([GOOD], Options(examples=1), lambda message: None).columns
    assert column.figures[THROWAWAY.name] == "crashed: RuntimeError: index helper failed"
    assert not column.as_expected
