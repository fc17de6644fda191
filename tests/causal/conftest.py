"""The default run's two-rank launches of causal-LM targets: the session's one causal launch
(``parity.training.launch.session.CAUSAL_SESSION``: impl's trainer, its planted twin and the loops on every two-rank
corner, the property table's corners reading the same records), and TRL's modes and megatron's schedule on one
corner: tests/causal/test_hf_trainer.py, test_trl_sft.py and test_loops.py read their records from them."""

from __future__ import annotations

import pytest

from parity.cases import CausalCase
from parity.strategies.causal import TWO_RANK_CORNERS
from parity.safety.releases import installed
from parity.targets import get_target
from parity.training.causal.drivers.ranks import run_on_ranks
from parity.training.causal.record import CausalRecord
from parity.training.launch.session import CAUSAL_SESSION, NotOnTwoRanks, machine_misfit
from tests.optional_parts import OPTIONAL_PARTS

#: Two ranks, rank 1 supervising nothing, microbatches of unequal counts: a rank-local count is twice the window's,
#: per-microbatch means differ from it (one of the two-rank corners).
TWO_RANK_CASE = CausalCase(window_size=2, steps=1, rows_per_microbatch=1, max_length=6, data_seed=1, world_size=2,
                           empty_ranks=(1,))
assert TWO_RANK_CASE in TWO_RANK_CORNERS
DRIVER = "parity.training.causal.drivers.causal_trainer:run_causal_trainer"
LOOPS = "tests.causal.loops"
MEGATRON = ("megatron-schedule:per-token", "megatron-schedule")
#: What the default run judges on every two-rank corner, in the session's one causal launch
#: (``parity.training.launch.session.CAUSAL_SESSION``) that the property table's corners read too: impl's trainer
#: and its planted twin that never sums its count over the ranks (tests/quality), the per-token loop and its twin.
SESSION_SUBJECTS = {"impl": "impl.causal_trainer:WindowedCausalTrainer",
                    "UNSUMMED": "tests.quality.corner_bugs:UnsummedCountCausalTrainer",
                    "PER_TOKEN": f"{LOOPS}:PER_TOKEN", "RANK_LOCAL": f"{LOOPS}:RANK_LOCAL"}


def pytest_collection_finish(session: pytest.Session) -> None:
    """Under impl (the default), the subjects above ride the first two-rank launch a test asks for."""
    selected = getattr(session.config, "parity_target", None)
    if selected is None or selected.name == "impl":
        CAUSAL_SESSION.judge(*SESSION_SUBJECTS.values())


def on_corners(name: str) -> dict[CausalCase, list[CausalRecord] | str]:
    """Every rank's records of a :data:`SESSION_SUBJECTS` subject on each two-rank corner (why, where declined)."""
    found = {}
    for case in TWO_RANK_CORNERS:
        try:
            found[case] = CAUSAL_SESSION.records(SESSION_SUBJECTS[name], case)
        except NotOnTwoRanks as why:
            if machine_misfit():
                pytest.skip(str(why))
            found[case] = str(why)
    return found


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
    mine = {name: CAUSAL_SESSION.records(SESSION_SUBJECTS[name], TWO_RANK_CASE) for name in
            ("impl", "PER_TOKEN", "RANK_LOCAL")}
    subjects = {**{name: get_target(name).loop for name in megatron_targets()}, **trl_modes()}
    if not subjects:
        return mine
    # the optional parts on this one corner, in a launch of their own: their imports cost seconds a subject
    records = run_on_ranks(DRIVER, list(subjects.values()), TWO_RANK_CASE, timeout_s=300)
    return {**mine, **dict(zip(subjects, records, strict=True))}


def counts(record: CausalRecord) -> list[list[int]]:
    return [[sum(row.supervised for row in microbatch) for microbatch in window] for window in record.windows]

