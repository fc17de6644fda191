"""Self-check at the trainer level: the pre-fix trainer fails parity alone and under two-rank DDP."""

from __future__ import annotations

import json

import pytest

from parity.distributed import launch
from parity.targets import get_target
from parity.trainer_run import TrainerCase, run_trainer, trainer_comparisons

BUG = "known-bug:local-mean"


def test_single_process_run_catches_the_local_mean_trainer(tmp_path):
    case = TrainerCase()
    record = run_trainer(get_target(BUG).load("trainer"), case, str(tmp_path))
    failures = [c for c in trainer_comparisons(case, [record]) if not c.holds]
    assert any("step 0 grad" in c.name for c in failures), "the first window's gradients must already be wrong"
    assert any(c.name.endswith("loss") for c in failures)


@pytest.mark.distributed
@pytest.mark.xdist_group("distributed")
def test_two_rank_run_catches_the_local_mean_trainer(tmp_path):
    result = tmp_path / "verdicts.json"
    launch("parity.ddp_cases", ["--target", BUG, "--json", str(result)], 2, timeout_s=600)
    holds = {name: verdict["holds"] for name, verdict in json.loads(result.read_text())["cases"].items()}
    # With nothing masked anywhere both normalisations give zero; every other case must be caught.
    assert holds == {"unequal-counts": False, "one-rank-empty": False, "all-ranks-empty": True, "rank-local": False}
