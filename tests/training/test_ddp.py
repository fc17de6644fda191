"""Two real processes over Gloo: every rank's gradients and parameters equal the oracle over all ranks' rows.

The default run launches once: the four fixed cases (unequal counts, one rank empty, all empty,
rank-local with the ranks seeded apart), and the pre-fix trainer on the case of unequal counts, which
must be caught. The ``long`` run (conftest.py) launches the exploration: two cases
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
#: The pre-fix trainer (a local mean per microbatch), and a case where its ranks' counts differ (the
#: long run's launch of tests/quality/test_finds_trainer_bug.py holds it to every case).
LOCAL_MEAN = get_target("known-bug:local-mean").trainer
CAUGHT_ON = ("unequal-counts",)


def _launch(target, tmp_path_factory, arguments: list[str]) -> dict:
    if not target.provides("trainer"):
        pytest.skip(f"target {target.name!r} has no trainer interface")
    result = tmp_path_factory.mktemp("ddp") / "verdicts.json"
    launch("parity.training.ddp_cases", ["--target", target.name, "--json", str(result), *arguments], WORLD_SIZE,
           timeout_s=600)
    return json.loads(result.read_text())["cases"]


@pytest.fixture(scope="session")
def verdicts(target, tmp_path_factory):
    """The default run's cases in one launch: the process start and imports (~7 s a rank) are paid once.

    Session scope: xdist may hand this module's tests to its worker in several batches, and a
    module fixture would be torn down (and the launch paid again) between them.
    """
    return _launch(target, tmp_path_factory, [a for case in CAUGHT_ON for a in ("--also", f"{case}={LOCAL_MEAN}")])


@pytest.fixture(scope="session")
def explored(target, tmp_path_factory):
    """The ``long`` run's cases in one launch: the drawn cases and the trainers drawing elsewhere."""
    arguments = ["--draw", str(DRAWN), "--draw-seed", str(DRAW_SEED)]
    return _launch(target, tmp_path_factory, arguments + [a for path in INTERLEAVED for a in ("--also", f"{INTERLEAVED_CASE}={path}")])


@pytest.mark.long
@pytest.mark.parametrize("path", INTERLEAVED)
def test_a_trainer_drawing_elsewhere_matches_the_reference_on_two_ranks(explored, path):
    """docs/trainer.md, Where a trainer may draw (every interleaving on every case: nightly, test_interleavings.py)."""
    verdict = explored[f"{path} {INTERLEAVED_CASE}"]
    assert verdict["holds"], f"{', '.join(verdict['kinds'])}: {verdict['worst']}"


@pytest.mark.parametrize("case", CAUGHT_ON)
def test_the_pre_fix_trainer_is_caught_on_two_ranks(verdicts, case):
    verdict = verdicts[f"{LOCAL_MEAN} {case}"]
    assert not verdict["holds"], f"{LOCAL_MEAN} passed {case} on two ranks"
    assert "normalisation" in verdict["kinds"] and "the local mean" in verdict["diagnosis"], verdict


@pytest.mark.parametrize("case", sorted(DDP_CASES))
def test_every_rank_matches_the_reference(verdicts, case):
    verdict = verdicts[case]
    assert verdict["holds"], f"{', '.join(verdict['kinds'])}: {verdict['worst']}"


@pytest.mark.long
@pytest.mark.parametrize("index", range(DRAWN))
def test_every_rank_matches_the_reference_on_a_drawn_case(explored, index):
    verdict = explored[f"drawn-{DRAW_SEED}-{index}"]
    assert verdict["holds"], (
        f"PARITY_DDP_SEED={DRAW_SEED}, case {verdict['case']}\n{', '.join(verdict['kinds'])}: {verdict['worst']}"
    )


def test_the_cases_realize_what_they_are_named_for(verdicts):
    totals = {name: [sum(counts) for counts in verdicts[name]["counts_per_rank"]] for name in DDP_CASES}
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
