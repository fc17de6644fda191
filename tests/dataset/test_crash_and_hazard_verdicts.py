"""The verdict machinery itself: a crash is reported as a crash, a hazard as a hazard.

Stand-in targets defined here (importable by path, as any target is) raise inside their own code or
alias what they return, so the harness's reporting is checked without megatron-core installed.
"""

from __future__ import annotations

import pytest
import torch

from parity.dataset.compare import aliasing_hazards
from parity.report.scenarios import Options, dataset_scenario
from parity.safety.crash import TargetCrashed, is_known_crash
from parity.strategies.dataset import UPSTREAM_PR_CASE
from parity.table.checks import dataset as properties
from parity.targets import Target

HERE = "tests.dataset.test_crash_and_hazard_verdicts"


def crashing_factory(documents, config):
    """A target whose index builder trips its own assertion."""
    if len(documents) < 100:  # raised, not asserted: pytest rewrites asserts in test modules
        raise AssertionError("an internal sanity check")


class _Aliasing:
    document_index = shuffle_index = ()

    def __len__(self):
        return 2

    def __getitem__(self, idx):
        shared = torch.zeros(4)
        return {"tokens": shared[:3], "labels": shared[1:], "position_ids": _CACHED}


_CACHED = torch.arange(3)


def test_an_assertion_inside_the_target_is_a_crash_naming_where_it_was_raised():
    with pytest.raises(TargetCrashed) as caught:
        properties.check_matches_oracle(crashing_factory, UPSTREAM_PR_CASE)
    crash = caught.value
    assert not isinstance(crash, AssertionError), "a crash must not read as a counterexample"
    assert str(crash).startswith("the target raised AssertionError: an internal sanity check at ")
    assert "tests/dataset/test_crash_and_hazard_verdicts.py:" in crash.where and "crashing_factory" in crash.where
    assert is_known_crash(crash, ("AssertionError at tests/dataset/test_crash_and_hazard_verdicts.py",))
    assert not is_known_crash(crash, ("AssertionError at megatron/",))


@pytest.mark.parametrize(
    ("known", "verdict"), [((), "crashed (UNEXPECTED)"), (("AssertionError",), "crashed (known upstream crash)")]
)
def test_the_report_shows_a_crashed_verdict(known, verdict):
    target = Target("crashes", "stand-in", "pass", dataset=f"{HERE}:crashing_factory", known_crashes=known)
    result = dataset_scenario([target], Options(), lambda message: None)
    column = result.columns[0]
    assert column.verdict == verdict
    assert "the target raised AssertionError: an internal sanity check" in column.figures["crash"]
    assert result.as_expected == bool(known)


def test_aliasing_is_named_key_by_key_and_sample_by_sample():
    dataset = _Aliasing()
    hazards = aliasing_hazards([(k, dataset[k]) for k in range(2)])
    assert str(hazards[0]).startswith("labels and tokens share storage (dataset[0]")
    assert str(hazards[1]).startswith(
        "position_ids is handed out by reference: it shares storage with an earlier sample's position_ids"
    )
    assert [hazard.short for hazard in hazards] == ["labels=tokens", "position_ids(ref)"]
    assert len(hazards) == 2  # one line per kind
    assert aliasing_hazards([(0, {"tokens": torch.zeros(3), "labels": torch.zeros(3)})]) == []
