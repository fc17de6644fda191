"""The default run's one two-rank launch of causal-LM targets, trainers, TRL's modes and loops together (the ranks
start and import torch once): tests/causal/test_hf_trainer.py, test_trl_sft.py and test_loops.py read their records
from it."""

from __future__ import annotations

import pytest

from parity.cases import CausalCase
from parity.safety.releases import installed
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


#: The TRL release TRL's verdicts were measured on (docs/causal-lm.md, TRL); the matrix's other pins are not.
TRL_MEASURED = "1.16.0"
TRL_MODES = {"completion-only": "COMPLETION_ONLY", "padding-free": "PADDING_FREE", "packing": "PACKING"}


def trl_modes() -> dict[str, str]:
    """TRL's SFTTrainer modes by name, where the measured release is installed."""
    if installed("trl") != TRL_MEASURED:
        return {}
    return {f"trl-sft:{name}": f"parity.training.causal.drivers.trl_sft:{mode}" for name, mode in TRL_MODES.items()}


def megatron_targets() -> tuple[str, ...]:
    """megatron-core's schedule where it is installed (its tests skip elsewhere, naming the install)."""
    return MEGATRON if OPTIONAL_PARTS["megatron-core"][0]() else ()


@pytest.fixture(scope="session")
def two_ranks() -> dict[str, list[CausalRecord]]:
    """Every rank's record of each subject on :data:`TWO_RANK_CASE`, by name."""
    subjects = {"impl": get_target("impl").causal_trainer, "PER_TOKEN": f"{LOOPS}:PER_TOKEN",
                "RANK_LOCAL": f"{LOOPS}:RANK_LOCAL", **{name: get_target(name).loop for name in megatron_targets()},
                **trl_modes()}
    records = run_on_ranks(DRIVER, list(subjects.values()), TWO_RANK_CASE, timeout_s=300)
    return dict(zip(subjects, records, strict=True))


def counts(record: CausalRecord) -> list[list[int]]:
    return [[sum(row.supervised for row in microbatch) for microbatch in window] for window in record.windows]

