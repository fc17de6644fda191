"""Two real processes over Gloo: every rank's gradients and parameters equal the oracle over all ranks' rows.

The four fixed cases (unequal counts, one rank empty, all empty, rank-local with the ranks seeded
apart), two drawn ones (from the suite's case space) and two trainers that draw their noise
elsewhere run in one launch. The drawn cases' seed is 0 under CI (reproducible) and random
otherwise; a failure names it, and ``PARITY_DDP_SEED`` replays it.
"""

from __future__ import annotations

import json
import os
import random

import pytest

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


@pytest.fixture(scope="session")
def verdicts(target, tmp_path_factory):
    """All cases in one launch: the process start and imports (~7 s a rank) are paid once.

    Session scope: xdist may hand this module's tests to its worker in several batches, and a
    module fixture would be torn down (and the launch paid again) between them.
    """
    if not target.provides("trainer"):
        pytest.skip(f"target {target.name!r} has no trainer interface")
    result = tmp_path_factory.mktemp("ddp") / "verdicts.json"
    arguments = ["--target", target.name, "--json", str(result), "--draw", str(DRAWN), "--draw-seed", str(DRAW_SEED)]
    arguments += [a for path in INTERLEAVED for a in ("--also", f"{INTERLEAVED_CASE}={path}")]
    launch("parity.training.ddp_cases", arguments, WORLD_SIZE, timeout_s=600)
    return json.loads(result.read_text())["cases"]


@pytest.mark.parametrize("path", INTERLEAVED)
def test_a_trainer_drawing_elsewhere_matches_the_reference_on_two_ranks(verdicts, path):
    """docs/trainer.md, Where a trainer may draw (every interleaving on every case: nightly, test_interleavings.py)."""
    verdict = verdicts[f"{path} {INTERLEAVED_CASE}"]
    assert verdict["holds"], f"{', '.join(verdict['kinds'])}: {verdict['worst']}"


@pytest.mark.parametrize("case", sorted(DDP_CASES))
def test_every_rank_matches_the_reference(verdicts, case):
    verdict = verdicts[case]
    assert verdict["holds"], f"{', '.join(verdict['kinds'])}: {verdict['worst']}"


@pytest.mark.parametrize("index", range(DRAWN))
def test_every_rank_matches_the_reference_on_a_drawn_case(verdicts, index):
    verdict = verdicts[f"drawn-{DRAW_SEED}-{index}"]
    assert verdict["holds"], (
        f"PARITY_DDP_SEED={DRAW_SEED}, case {verdict['case']}\n{', '.join(verdict['kinds'])}: {verdict['worst']}"
    )


def test_the_cases_realize_what_they_are_named_for(verdicts):
    totals = {name: [sum(counts) for counts in v["counts_per_rank"]] for name, v in verdicts.items()}
    assert totals["unequal-counts"][0] != totals["unequal-counts"][1] and min(totals["unequal-counts"]) > 0
    assert totals["one-rank-empty"][1] == 0 < totals["one-rank-empty"][0]
    assert totals["all-ranks-empty"] == [0, 0]
    assert totals["rank-local"][0] != totals["rank-local"][1]


def test_a_rank_that_dies_fails_the_run_with_its_error():
    with pytest.raises(RankFailed, match=r"^rank 1 failed: RuntimeError: rank 1 failed on purpose \(--fail-rank\) at "
                                         r"parity/training/ddp_selfcheck.py:\d+ \(in main\)"):
        launch("parity.training.ddp_selfcheck", ["--fail-rank", "1"], WORLD_SIZE, timeout_s=120)


def test_a_rank_that_hangs_fails_the_run_at_the_timeout():
    with pytest.raises(RankFailed, match=r"^the 2-rank run timed out after 8 s: rank 0 .*; rank 1 "):
        launch("parity.training.ddp_selfcheck", ["--hang-rank", "1"], WORLD_SIZE, timeout_s=8)


def test_a_healthy_group_all_reduces():
    outputs = launch("parity.training.ddp_selfcheck", [], WORLD_SIZE, timeout_s=120)
    assert [line.strip() for line in outputs] == [f"rank {r} of {WORLD_SIZE}: all_reduce ok" for r in range(WORLD_SIZE)]
