"""Self-check at the trainer level: the pre-fix trainers fail parity, named as normalisation bugs.

``known-bug:local-mean`` (impl's published-contract trainer before the fix) and
``known-bug:logits-local-mean`` (the logits-style trainer before its fix) must be caught alone and
under two-rank DDP, and a failing whole-run property must report after a bounded number of runs. The
default run's two-rank evidence rides on tests/training/test_ddp.py's launch (the pre-fix trainer on the
cases whose ranks' counts differ); the launch of its own, over every fixed case, is ``long``.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from parity.cases import TrainerCase
from parity.compare import ParityFailure, assert_verdict
from parity.table.run_budget import fraction_of_profile, shrinks_whole_runs
from parity.targets import get_target
from parity.training.diffusion.drivers.trainer_run import run_trainer
from parity.training.diffusion.verdict import trainer_verdict
from parity.training.launch.processes import launch

BUGS = ["known-bug:local-mean", "known-bug:logits-local-mean"]


@pytest.mark.parametrize("bug", BUGS)
def test_single_process_run_catches_the_pre_fix_trainer_as_a_normalisation_bug(bug, tmp_path):
    case = TrainerCase()
    verdict = trainer_verdict(case, [run_trainer(get_target(bug).load("trainer"), case, str(tmp_path))])
    assert not verdict.holds and "normalisation" in verdict.failure_kinds
    failures = verdict.failures
    assert any(c.step == 0 and c.quantity == "grad" for c in failures), "the first window's gradients must already be wrong"
    assert any(c.quantity == "loss" for c in failures)
    worst = max(c.ratio for c in failures)
    assert worst > 1e4, f"caught by orders of magnitude, not {worst:.3g}x the budget"
    assert verdict.diagnosis.startswith("this trainer computes mean_g(S_g / N_g), the local mean"), verdict.diagnosis


def test_a_failing_trainer_property_reports_after_a_bounded_number_of_runs(tmp_path_factory):
    """The cost of a failure is counted in training runs (parity/table/run_budget.py): the first failure
    comes within the property's examples, and outside a shrinking profile (nightly) exactly one run
    follows it, Hypothesis's replay of that example as drawn. The nightly profile may shrink."""
    trainer_class = get_target("known-bug:logits-local-mean").load("trainer")

    # Windows of several microbatches with masks in them: where a local mean can differ at all.
    visible = st.builds(
        TrainerCase,
        examples_per_rank=st.integers(4, 6),
        window_size=st.integers(2, 3),
        data_seed=st.integers(0, 2**16),
        noise_seed=st.integers(0, 2**16),
        eps=st.sampled_from([1e-3, 0.05]),
    )
    budget = fraction_of_profile(0.2)
    runs, first_failure = 0, None

    @budget
    @given(case=visible)
    def prop(case):
        nonlocal runs, first_failure
        runs += 1
        try:
            assert_verdict(trainer_verdict(case, [run_trainer(trainer_class, case, str(tmp_path_factory.mktemp("bug")))]))
        except ParityFailure:
            first_failure = first_failure or runs
            raise

    with pytest.raises(ParityFailure, match="normalisation"):
        prop()
    assert first_failure <= budget.max_examples, f"first failure at run {first_failure} of {budget.max_examples}"
    if not shrinks_whole_runs():
        assert runs == first_failure + 1, f"{runs - first_failure - 1} shrink runs in a profile that does not shrink"


@pytest.mark.long
@pytest.mark.distributed
@pytest.mark.xdist_group("distributed")
def test_two_rank_run_catches_the_local_mean_trainer(tmp_path):
    result = tmp_path / "verdicts.json"
    launch("parity.training.diffusion.drivers.ranks", ["--target", BUGS[0], "--json", str(result)], 2, timeout_s=600)
    cases = json.loads(result.read_text())["cases"]
    holds = {name: verdict["holds"] for name, verdict in cases.items()}
    # With nothing masked anywhere both normalisations give zero; every other case must be caught.
    assert holds == {"unequal-counts": False, "one-rank-empty": False, "all-ranks-empty": True, "rank-local": False}
    assert all("normalisation" in v["kinds"] for v in cases.values() if not v["holds"])
    assert all("the local mean" in v["diagnosis"] for v in cases.values() if not v["holds"]), "named on two ranks too"
