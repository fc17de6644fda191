"""``python -m parity bench`` in miniature: one seed and a few examples, so every part is exercised.

The tests that read the run share it (a module fixture, one xdist worker). The hunts stop at the
first counterexample (no shrinking), yet the run still takes 35 s on two cores under ``pytest -n auto``:
those tests are ``long`` (conftest.py); the dtype selection below runs by default.
"""

from __future__ import annotations

import pytest
from hypothesis import find

from parity.fleet.bench import SIZE_NOTE, format_bench, hunted_properties, run_bench
from parity.table.rows import PROPERTIES
from parity.targets import builtin_targets


def on_the_run(test):
    """A test of the miniature run itself: ``long``, on the worker that holds the run."""
    return pytest.mark.long(pytest.mark.xdist_group("bench")(test))


#: Every known bug some hunted property of the table must catch.
KNOWN_BUGS = sorted(
    {name for prop in PROPERTIES if prop.hunted for name in prop.catches if name in builtin_targets()}
)


@pytest.fixture(scope="module")
def result() -> dict:
    # One example per property: the first derandomized example is the smallest, so the diffusion
    # properties cost a fraction of a second each.
    return run_bench(seeds=1, hunt_examples=50, rate_examples=1, rate_seconds=5.0, shrink=False)


@on_the_run
def test_the_result_has_the_documented_keys(result):
    assert set(result) == {"settings", "hunts", "dataset", "rates", "seconds"}
    assert result["settings"] == {
        "seeds": 1, "hunt_examples": 50, "rate_examples": 1, "rate_seconds": 5.0, "dtype": None, "device": "cpu",
        "targets": None,
    }
    assert result["dataset"]["serve"]["oracle_over_impl"] > 1, "the cached dataset must serve faster than the oracle"
    impl = builtin_targets()["impl"]
    assert set(result["rates"]) == {prop.name for prop in PROPERTIES if prop.applies_to(impl)}
    for name, rate in result["rates"].items():
        assert rate["examples"] == 1 and rate["examples_per_second"] > 0, name


@on_the_run
def test_every_known_bug_is_hunted_and_found(result):
    assert {hunt["target"] for hunt in result["hunts"]} == set(KNOWN_BUGS)
    for hunt in result["hunts"]:
        assert hunt["found"] == hunt["seeds"] == 1, f"{hunt['target']} / {hunt['property']}: {hunt['runs']}"
        assert hunt["median_examples_to_failure"] >= 1
        assert hunt["median_counterexample_size"] == len(hunt["runs"][0]["counterexample"])
        assert hunt["median_seconds_to_failure"] <= hunt["median_seconds_with_shrinking"]


@on_the_run
def test_the_table_names_every_target_and_property(result):
    text = format_bench(result)
    for name in [*KNOWN_BUGS, *result["rates"]]:
        assert name in text
    assert SIZE_NOTE in text and "Finding the known bugs (on cpu):" in text


def test_under_target_only_its_hunt_is_printed_and_nothing_untimed_is_tabled():
    """``bench --target T``: the named bug's hunt, and the dataset and rate sections each one line saying why not."""
    result = run_bench(seeds=1, hunt_examples=5, shrink=False, only=["known-bug:cache-alias"])
    assert {hunt["target"] for hunt in result["hunts"]} == {"known-bug:cache-alias"}
    assert result["settings"]["targets"] == ["known-bug:cache-alias"] and result["rates"] == {}
    text = format_bench(result)
    assert "Default-suite properties on impl: not timed under --target" in text
    assert "examples/s" not in text and "Dataset benchmark: not run under --dtype" in text, text


def test_with_a_dtype_only_the_properties_that_draw_it_run_every_case_in_it():
    local_mean = builtin_targets()["known-bug:local-mean"]
    window, training = hunted_properties(local_mean, "bfloat16")
    assert (window.name, training.name) == ("diffusion/window-parity", "training/any-run-matches")
    assert hunted_properties(builtin_targets()["known-bug:cache-alias"], "bfloat16") == []
    # The window property's hunt is the cheap one; a whole run's is the same hunt (the fixture's).
    found = window.hunt(local_mean.load("loss"), max_examples=20, seed=0, shrink=False, explicit=False, dtype="bfloat16")
    assert found.found and "torch.bfloat16" in found.counterexample, found
    training = next(prop for prop in PROPERTIES if prop.name == "training/any-run-matches")
    drawn = find(training.strategy("float16"), lambda arguments: arguments["case"].window_size > 1)["case"]
    assert drawn.dtype == "float16" and drawn.autocast
    with pytest.raises(ValueError, match="dataset/matches-oracle draws no dtype; got 'bfloat16'"):
        PROPERTIES[0].strategies("bfloat16")
