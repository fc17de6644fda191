"""Two real processes over Gloo: every rank's gradients and parameters equal the oracle over all ranks' rows.

The default run launches once: every shipped trainer (impl's loss-pair trainer and the logits trainer,
and their pre-fix twins) on the four fixed cases (unequal counts, one rank empty, all empty, rank-local
with the ranks seeded apart): the two correct ones must hold, the twins be caught wherever a rank's
count is not the window's, and a planted bug of the logits trainer's rank-local branch be caught too. The ``long`` run (conftest.py) launches the exploration: two cases
drawn from the suite's case space and two trainers that draw their noise elsewhere. The drawn cases'
seed is 0 under CI (reproducible) and random otherwise; a failure names it, and ``PARITY_DDP_SEED``
replays it.
"""

from __future__ import annotations

import json
import os
import random

import pytest

from parity.targets import get_target
from parity.training.ddp_cases import DDP_CASES
from parity.training.distributed import RankFailed, launch

pytestmark = [pytest.mark.distributed, pytest.mark.xdist_group("distributed")]

WORLD_SIZE = 2
DRAWN = 2
#: Two trainers that draw the noise elsewhere than the whole window at once (the one from the wild that a
#: greedy replay called wrong, and the model's own forward with a deferred backward), on the case whose ranks
#: are seeded apart.
INTERLEAVED = ("tests.training.interleavings:FetchThenDrawTrainer", "tests.training.interleavings:ModelDrawsTrainer")
INTERLEAVED_CASE = "rank-local"
DRAW_SEED = int(os.environ.get("PARITY_DDP_SEED", 0 if os.environ.get("CI") else random.randrange(2**16)))
#: The shipped trainers beside the session's target (when it is impl), each on every fixed case.
CORRECT = (get_target("impl").trainer, get_target("logits").trainer)
TWINS = (get_target("known-bug:local-mean").trainer, get_target("known-bug:logits-local-mean").trainer)
#: A local mean differs from the window's count wherever the window's masked tokens are not split evenly;
#: with every rank empty the loss is 0 either way.
CAUGHT_ON = ("unequal-counts", "one-rank-empty", "rank-local")
#: A planted bug no one-rank case can show: the logits trainer scaling by the world size when it did not
#: gather the counts (tests/quality/corner_bugs.py).
RANK_LOCAL_SCALED = "tests.quality.corner_bugs:RankLocalScaledLogitsTrainer"


def _launch(target, tmp_path_factory, arguments: list[str]) -> dict:
    if not target.provides("trainer"):
        pytest.skip(f"target {target.name!r} has no trainer interface")
    result = tmp_path_factory.mktemp("ddp") / "verdicts.json"
    launch("parity.training.ddp_cases", ["--json", str(result), *arguments], WORLD_SIZE, timeout_s=600)
    return json.loads(result.read_text())["cases"]


def shipped_trainers(target) -> list[str]:
    """The session's target's trainer; under impl (the default), every shipped trainer and the planted bug."""
    if target.name != "impl":
        return [target.trainer]
    return [*CORRECT, *TWINS, RANK_LOCAL_SCALED]


@pytest.fixture(scope="session")
def verdicts(target, tmp_path_factory):
    """The default run's cases in one launch: the process start and imports (~7 s a rank) are paid once, and
    each further trainer costs its four runs only (about a second each).

    Session scope: xdist may hand this module's tests to its worker in several batches, and a
    module fixture would be torn down (and the launch paid again) between them. Keyed ``MODULE:CLASS case``.
    """
    if not target.provides("trainer"):
        pytest.skip(f"target {target.name!r} has no trainer interface")
    return _launch(target, tmp_path_factory, [a for path in shipped_trainers(target) for a in ("--trainer", path)])


@pytest.fixture(scope="session")
def explored(target, tmp_path_factory):
    """The ``long`` run's cases in one launch: the drawn cases and the trainers drawing elsewhere."""
    arguments = ["--draw", str(DRAWN), "--draw-seed", str(DRAW_SEED)]
    return _launch(target, tmp_path_factory, ["--target", target.name, *arguments]
                   + [a for path in INTERLEAVED for a in ("--also", f"{INTERLEAVED_CASE}={path}")])


@pytest.mark.long
@pytest.mark.parametrize("path", INTERLEAVED)
def test_a_trainer_drawing_elsewhere_matches_the_reference_on_two_ranks(explored, path):
    """docs/trainer.md, Where a trainer may draw (every interleaving on every case: nightly, test_interleavings.py)."""
    verdict = explored[f"{path} {INTERLEAVED_CASE}"]
    assert verdict["holds"], f"{', '.join(verdict['kinds'])}: {verdict['worst']}"


def _only_under_impl(target) -> None:
    if target.name != "impl":
        pytest.skip(f"the shipped trainers run beside impl only; the session's target is {target.name}")


@pytest.mark.parametrize("twin", TWINS)
@pytest.mark.parametrize("case", CAUGHT_ON)
def test_each_pre_fix_twin_is_caught_on_two_ranks(target, verdicts, twin, case):
    _only_under_impl(target)
    verdict = verdicts[f"{twin} {case}"]
    assert not verdict["holds"], f"{twin} passed {case} on two ranks"
    assert "normalisation" in verdict["kinds"] and "the local mean" in verdict["diagnosis"], verdict


def test_a_rank_local_scaling_bug_of_the_logits_trainer_is_caught(target, verdicts):
    _only_under_impl(target)
    assert not verdicts[f"{RANK_LOCAL_SCALED} rank-local"]["holds"]
    assert "normalisation" in verdicts[f"{RANK_LOCAL_SCALED} rank-local"]["kinds"]
    assert all(verdicts[f"{RANK_LOCAL_SCALED} {case}"]["holds"] for case in DDP_CASES if case != "rank-local")


@pytest.mark.parametrize("case", sorted(DDP_CASES))
def test_every_rank_matches_the_reference(target, verdicts, case):
    for trainer in CORRECT if target.name == "impl" else [target.trainer]:
        verdict = verdicts[f"{trainer} {case}"]
        assert verdict["holds"], f"{trainer}: {', '.join(verdict['kinds'])}: {verdict['worst']}"


@pytest.mark.long
@pytest.mark.parametrize("index", range(DRAWN))
def test_every_rank_matches_the_reference_on_a_drawn_case(explored, index):
    verdict = explored[f"drawn-{DRAW_SEED}-{index}"]
    assert verdict["holds"], (
        f"PARITY_DDP_SEED={DRAW_SEED}, case {verdict['case']}\n{', '.join(verdict['kinds'])}: {verdict['worst']}"
    )


def test_the_cases_realize_what_they_are_named_for(verdicts):
    first = next(iter(verdicts)).rpartition(" ")[0]
    totals = {name: [sum(counts) for counts in verdicts[f"{first} {name}"]["counts_per_rank"]] for name in DDP_CASES}
    assert totals["unequal-counts"][0] != totals["unequal-counts"][1] and min(totals["unequal-counts"]) > 0
    assert totals["one-rank-empty"][1] == 0 < totals["one-rank-empty"][0]
    assert totals["all-ranks-empty"] == [0, 0]
    assert totals["rank-local"][0] != totals["rank-local"][1]


def test_a_rank_that_dies_fails_the_run_with_its_error():
    with pytest.raises(RankFailed, match=r"^rank 1 failed: RuntimeError: rank 1 failed on purpose \(--fail-rank\) at "
                                         r"parity/training/ddp_selfcheck.py:\d+ \(in main\)"):
        launch("parity.training.ddp_selfcheck", ["--fail-rank", "1"], WORLD_SIZE, timeout_s=120)


@pytest.mark.long  # the launcher's bound holds in every run; the fault gallery (tests/faults) has the others
def test_a_rank_that_hangs_fails_the_run_at_the_timeout():
    with pytest.raises(RankFailed, match=r"^the 2-rank run timed out after 5 s: rank 0 .*; rank 1 "):
        launch("parity.training.ddp_selfcheck", ["--hang-rank", "1"], WORLD_SIZE, timeout_s=5)


@pytest.mark.long  # the default run's launch above is a healthy group all-reducing; this is the selfcheck command
def test_a_healthy_group_all_reduces():
    outputs = launch("parity.training.ddp_selfcheck", [], WORLD_SIZE, timeout_s=120)
    assert [line.strip() for line in outputs] == [f"rank {r} of {WORLD_SIZE}: all_reduce ok" for r in range(WORLD_SIZE)]
