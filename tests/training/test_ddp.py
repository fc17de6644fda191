"""Two real processes over Gloo: every rank's gradients and parameters equal the oracle over all ranks' rows.

The default run launches once (``parity.training.launch.session``): every shipped trainer (impl's loss-pair
trainer and the logits trainer, and their pre-fix twins) on the four fixed cases (unequal counts, one rank
empty, all empty, rank-local with the ranks seeded apart): the two correct ones must hold, the twins be caught
wherever a rank's count is not the window's, and a planted bug of the logits trainer's rank-local branch be
caught too. Under ``--target T`` the launch trains T's trainer, which must hold; where T cannot train on two
ranks (no trainer, one declared rank, a machine too small) its tests skip naming why
(tests/training/test_ddp_session.py runs trainers of another distribution through them). The ``long`` run
(conftest.py) launches the exploration: two cases drawn from the suite's case space and two trainers that
draw their noise elsewhere. The drawn cases' seed is 0 under CI (reproducible) and random otherwise; a
failure names it, and ``PARITY_DDP_SEED`` replays it."""

from __future__ import annotations

import os
import random

import pytest

from parity.targets import get_target
from parity.training.diffusion.drivers.ranks import DDP_CASES
from parity.training.launch.processes import RankFailed, launch
from parity.training.launch.session import WORLD_SIZE, NotOnTwoRanks, launch_trainers

pytestmark = [pytest.mark.distributed, pytest.mark.xdist_group("distributed")]

DRAWN = 2
#: Two trainers that draw the noise elsewhere than the whole window at once (the one from the wild that a
#: greedy replay called wrong, and the model's own forward with a deferred backward), on the case whose ranks
#: are seeded apart.
INTERLEAVED = ("tests.training.interleavings:FetchThenDrawTrainer", "tests.training.interleavings:ModelDrawsTrainer")
INTERLEAVED_CASE = "rank-local"
DRAW_SEED = int(os.environ.get("PARITY_DDP_SEED", 0 if os.environ.get("CI") else random.randrange(2**16)))
#: The shipped trainers beside the session's target (when it is impl), each on every fixed case.
CORRECT = ("impl", "logits")
TWINS = ("known-bug:local-mean", "known-bug:logits-local-mean")
#: A local mean differs from the window's count wherever the window's masked tokens are not split evenly;
#: with every rank empty the loss is 0 either way.
CAUGHT_ON = ("unequal-counts", "one-rank-empty", "rank-local")
#: A planted bug no one-rank case can show: the logits trainer scaling by the world size when it did not
#: gather the counts (tests/quality/corner_bugs.py).
RANK_LOCAL_SCALED = "tests.quality.corner_bugs:RankLocalScaledLogitsTrainer"
#: A trainer that declares one rank only: in the launch at no cost, every case declined naming why.
ONE_RANK = "tests.training.shipped_trainers:ONE_RANK"


def judged(target) -> list[str]:
    """The targets whose trainers the session judges on two ranks: its own; under impl (the default), every
    shipped trainer and its pre-fix twin."""
    return [*CORRECT, *TWINS] if target.name == "impl" else [target.name]


def verdict(launched, trainer: str, case: str | None = None) -> dict:
    """``trainer``'s verdict on ``case`` (on every case it ran, without one); a skip naming why where it has
    none (left out of the launch, a case declined), never a missing key."""
    try:
        return launched.of(trainer) if case is None else launched.case(trainer, case)
    except NotOnTwoRanks as why:
        pytest.skip(str(why))


@pytest.fixture(scope="session")
def verdicts(target):
    """The default run's cases in one launch (``parity.training.launch.session``): the session's trainers and,
    under impl, the planted bug and a trainer declaring one rank only.

    Session scope: xdist may hand this module's tests to its worker in several batches, and a
    module fixture would be torn down (and the launch paid again) between them.
    """
    planted = [RANK_LOCAL_SCALED, ONE_RANK] if target.name == "impl" else []
    return launch_trainers([get_target(name) for name in judged(target)], planted)


@pytest.fixture(scope="session")
def explored(target):
    """The ``long`` run's cases in one launch: the drawn cases and the trainers drawing elsewhere."""
    arguments = ["--draw", str(DRAWN), "--draw-seed", str(DRAW_SEED)]
    return launch_trainers([target], arguments=[*arguments, *(a for path in INTERLEAVED
                                                             for a in ("--also", f"{INTERLEAVED_CASE}={path}"))])


@pytest.mark.long
@pytest.mark.parametrize("path", INTERLEAVED)
def test_a_trainer_drawing_elsewhere_matches_the_reference_on_two_ranks(explored, path):
    """docs/trainer.md, Where a trainer may draw (every interleaving on every case: nightly, test_interleavings.py)."""
    result = verdict(explored, path, INTERLEAVED_CASE)
    assert result["holds"], f"{', '.join(result['kinds'])}: {result['worst']}"


def _only_under_impl(target) -> None:
    if target.name != "impl":
        pytest.skip(f"the shipped trainers run beside impl only; the session's target is {target.name}")


@pytest.mark.parametrize("twin", TWINS)
@pytest.mark.parametrize("case", CAUGHT_ON)
def test_each_pre_fix_twin_is_caught_on_two_ranks(target, verdicts, twin, case):
    _only_under_impl(target)
    result = verdict(verdicts, twin, case)
    assert not result["holds"], f"{twin} passed {case} on two ranks"
    assert "normalisation" in result["kinds"] and "the local mean" in result["diagnosis"], result


def test_a_rank_local_scaling_bug_of_the_logits_trainer_is_caught(target, verdicts):
    _only_under_impl(target)
    cases = verdict(verdicts, RANK_LOCAL_SCALED)
    assert not cases["rank-local"]["holds"] and "normalisation" in cases["rank-local"]["kinds"]
    assert all(cases[case]["holds"] for case in DDP_CASES if case != "rank-local")


def test_a_trainer_declaring_one_rank_declines_every_case_naming_why(target, verdicts):
    _only_under_impl(target)
    cases = verdict(verdicts, ONE_RANK)
    assert {case: v.get("declined") for case, v in cases.items()} == dict.fromkeys(
        DDP_CASES, "it trains on one rank only: a research loop written for one GPU")
    with pytest.raises(NotOnTwoRanks, match=r"declined unequal-counts on two ranks: it trains on one rank only"):
        verdicts.case(ONE_RANK, "unequal-counts")


@pytest.mark.parametrize("case", sorted(DDP_CASES))
def test_every_rank_matches_the_reference(target, verdicts, case):
    for trainer in CORRECT if target.name == "impl" else [target.name]:
        result = verdict(verdicts, trainer, case)
        assert result["holds"], f"{trainer}: {', '.join(result['kinds'])}: {result.get('diagnosis') or ''}\n{result['worst']}"


@pytest.mark.long
@pytest.mark.parametrize("index", range(DRAWN))
def test_every_rank_matches_the_reference_on_a_drawn_case(target, explored, index):
    result = verdict(explored, target.name, f"drawn-{DRAW_SEED}-{index}")
    assert result["holds"], (
        f"PARITY_DDP_SEED={DRAW_SEED}, case {result['case']}\n{', '.join(result['kinds'])}: {result['worst']}"
    )


def test_the_cases_realize_what_they_are_named_for(harness_self_check, verdicts):
    cases = verdict(verdicts, "impl")
    totals = {name: [sum(counts) for counts in cases[name]["counts_per_rank"]] for name in DDP_CASES}
    assert totals["unequal-counts"][0] != totals["unequal-counts"][1] and min(totals["unequal-counts"]) > 0
    assert totals["one-rank-empty"][1] == 0 < totals["one-rank-empty"][0]
    assert totals["all-ranks-empty"] == [0, 0]
    assert totals["rank-local"][0] != totals["rank-local"][1]


def test_a_rank_that_dies_fails_the_run_with_its_error():
    with pytest.raises(RankFailed, match=r"^rank 1 failed: RuntimeError: rank 1 failed on purpose \(--fail-rank\) at "
                                         r"parity/training/launch/selfcheck.py:\d+ \(in main\)"):
        launch("parity.training.launch.selfcheck", ["--fail-rank", "1"], WORLD_SIZE, timeout_s=120)


@pytest.mark.long  # the launcher's bound holds in every run; the fault gallery (tests/faults) has the others
def test_a_rank_that_hangs_fails_the_run_at_the_timeout():
    with pytest.raises(RankFailed, match=r"^the 2-rank run timed out after 5 s: rank 0 .*; rank 1 "):
        launch("parity.training.launch.selfcheck", ["--hang-rank", "1"], WORLD_SIZE, timeout_s=5)


@pytest.mark.long  # the default run's launch above is a healthy group all-reducing; this is the selfcheck command
def test_a_healthy_group_all_reduces():
    outputs = launch("parity.training.launch.selfcheck", [], WORLD_SIZE, timeout_s=120)
    assert [line.strip() for line in outputs] == [f"rank {r} of {WORLD_SIZE}: all_reduce ok" for r in range(WORLD_SIZE)]
