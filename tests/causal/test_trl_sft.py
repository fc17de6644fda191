"""TRL's ``SFTTrainer`` as shipped, judged by the window rule in each of its three ways of batching (docs/causal-lm.md,
TRL): ``completion_only_loss`` on padded microbatches, ``padding_free`` and ``packing`` (best-fit decreasing), on
one rank and on two (one launch runs all three), on CPU with eager attention. An optional part: it skips, naming
the install, where TRL is not installed, and under a TRL release other than the one measured."""

from __future__ import annotations

import pytest

from parity.safety.releases import installed, transformers_trainer_defects
from parity.targets import builtin_targets
from parity.training.causal.drivers.trl_sft import COMPLETION_ONLY, PACKING, PADDING_FREE, run_sft
from parity.training.causal.record import CausalCase, CausalRecord
from parity.training.causal.verdict import causal_verdict
from tests.causal.conftest import TRL_MEASURED, TWO_RANK_CASE, trl_modes

pytestmark = [pytest.mark.needs("trl"),
              pytest.mark.skipif(installed("trl") not in (None, TRL_MEASURED),
                                 reason=f"TRL {installed('trl')}: its modes are measured on TRL {TRL_MEASURED} only")]

MODES = {"completion-only": COMPLETION_ONLY, "padding-free": PADDING_FREE, "packing": PACKING}
#: Two windows of three microbatches; packed case rows, so TRL's documents are short enough to pack several a row.
CASE = CausalCase(window_size=3, steps=2, rows_per_microbatch=2, max_length=12, packed=True, data_seed=4)


def assert_as_expected(case: CausalCase, records: list[CausalRecord]) -> None:
    """Holds, unless the installed transformers divides again by the accumulation steps (5.5.0 to 5.5.3), which
    SFTTrainer leaves its scaling to (``parity.targets.transformers_trainer_defects``)."""
    verdict = causal_verdict(case, records)
    assert verdict.holds == (not transformers_trainer_defects(inherited=True)), verdict.describe(3)


@pytest.mark.parametrize("name", sorted(MODES))
def test_each_mode_holds_on_one_rank(name):
    record = run_sft(MODES[name], CASE)
    assert sum(len(window) for window in record.windows) > len(record.windows), "some window accumulates"
    assert_as_expected(CASE, [record])


def test_each_mode_is_a_target_of_its_own():
    targets = builtin_targets()
    for name, mode in MODES.items():
        target = targets[f"trl-sft:{name}"]
        assert target.load("causal_trainer") is mode
        assert target.expect == ("fail" if transformers_trainer_defects(inherited=True) else "pass")


@pytest.mark.distributed
@pytest.mark.xdist_group("distributed")
def test_each_mode_holds_on_two_ranks_one_of_which_supervises_nothing(two_ranks):
    """From the session's one two-rank launch (tests/causal/conftest.py)."""
    for name in trl_modes():
        assert_as_expected(TWO_RANK_CASE, two_ranks[name])
