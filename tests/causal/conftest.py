"""The default run's one two-rank launch of causal-LM targets, trainers and loops together (the ranks start and import
torch once): tests/causal/test_hf_trainer.py and test_loops.py read their records from it."""

from __future__ import annotations

import pytest

from parity.cases import CausalCase
from parity.targets import get_target
from parity.training.causal.drivers.ranks import run_on_ranks
from parity.training.causal.record import CausalRecord
from tests.optional_parts import OPTIONAL_PARTS

#: Two ranks, rank 1 supervising nothing, microbatches of unequal counts: a rank-local count is twice the window's,
#: per-microbatch means differ from it.
TWO_RANK_CASE = CausalCase(window_size=2, steps=1, rows_per_microbatch=1, max_length=6, data_seed=1, world_size=2,
                           empty_ranks=(1,))
DRIVER = "parity.training.causal.drivers.causal_trainer:run_causal_trainer"
LOOPS = "tests.causal.loops"
MEGATRON = ("megatron-schedule:per-token", "megatron-schedule")


def megatron_targets() -> tuple[str, ...]:
    """megatron-core's schedule where it is installed (its tests skip elsewhere, naming the install)."""
    return MEGATRON if OPTIONAL_PARTS["megatron-core"][0]() else ()


@pytest.fixture(scope="session")
def two_ranks() -> dict[str, list[CausalRecord]]:
    """Every rank's record of each subject on :data:`TWO_RANK_CASE`, by name."""
    subjects = {"impl": get_target("impl").causal_trainer, "PER_TOKEN": f"{LOOPS}:PER_TOKEN",
                "RANK_LOCAL": f"{LOOPS}:RANK_LOCAL", **{name: get_target(name).loop for name in megatron_targets()}}
    records = run_on_ranks(DRIVER, list(subjects.values()), TWO_RANK_CASE, timeout_s=150)
    return dict(zip(subjects, records, strict=True))


def counts(record: CausalRecord) -> list[list[int]]:
    return [[sum(row.supervised for row in microbatch) for microbatch in window] for window in record.windows]

