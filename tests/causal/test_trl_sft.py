"""TRL's ``SFTTrainer`` as shipped, judged by the window rule in each of its three ways of batching (docs/causal-lm.md,
TRL): ``completion_only_loss`` on padded microbatches, ``padding_free`` and ``packing`` (best-fit decreasing), on
one rank and on two (one launch runs all three), on CPU with eager attention. An optional part: it skips, naming
the install, where TRL is not installed, and under a TRL release other than the one measured."""

from __future__ import annotations

import re

import pytest

from parity.safety.releases import installed, transformers_trainer_defects
from parity.targets import builtin_targets
from parity.training.causal.drivers.trl_sft import COMPLETION_ONLY, PACKING, PADDING_FREE, run_sft
from parity.training.causal.objective_terms import counted_before
from parity.training.causal.record import CausalCase, CausalRecord, step_windows
from parity.training.causal.verdict import causal_verdict
from tests.causal.conftest import TRL_MEASURED, TWO_RANK_CASE, trl_modes

pytestmark = [pytest.mark.needs("trl"),
              pytest.mark.skipif(installed("trl") not in (None, TRL_MEASURED),
                                 reason=f"TRL {installed('trl')}: its modes are measured on TRL {TRL_MEASURED} only")]

#: What each inherited defect of the installed transformers is named (docs/causal-lm.md, Naming the objective).
NAMED = {"accelerate's backward": "accumulation steps in accelerate's backward, the loss it logs not",
         "before the shift": "the window's sum / the labels != -100 counted before the shift"}
MODES = {"completion-only": COMPLETION_ONLY, "padding-free": PADDING_FREE, "packing": PACKING}
#: Two windows of three microbatches; packed case rows, so TRL's documents are short enough to pack several a row.
CASE = CausalCase(window_size=3, steps=2, rows_per_microbatch=2, max_length=12, packed=True, data_seed=4)


def shown(defects: tuple[str, ...], case: CausalCase, records: list[CausalRecord]) -> set[str]:
    """Which of ``defects`` the run can show (the keys of ``NAMED``): accelerate's second division where a window
    accumulates; the count before the shift where some window's count of labels as served differs from its count
    after the shift (a row's first label supervised)."""
    keys = {key for key in NAMED if any(key in defect for defect in defects)}
    rows = [[row for ranks in window for microbatches in ranks for row in microbatches] for window in step_windows(records)]
    if case.window_size == 1:
        keys.discard("accelerate's backward")
    if all(sum(map(counted_before, window)) == sum(row.supervised for row in window) for window in rows):
        keys.discard("before the shift")
    return keys


def assert_as_expected(mode: str, case: CausalCase, records: list[CausalRecord]) -> None:
    """Holds, unless the installed transformers has a defect the mode inherits that the run can show, SFTTrainer
    leaving its scaling to the Trainer (``parity.safety.releases.transformers_trainer_defects``): then one objective
    the verdict names carries those defects and no other (on 5.5.0 to 5.5.3 every mode inherits accelerate's second
    division; on 5.5 to 5.9 completion-only the count before the shift)."""
    verdict = causal_verdict(case, records)
    expected = shown(transformers_trainer_defects(trl_mode=mode), case, records)
    assert verdict.holds == (not expected), verdict.describe(3)
    if expected:
        assert verdict.diagnosis.startswith("this run computes "), verdict.diagnosis
        named = re.split(r" \(on this run, equally: ", verdict.diagnosis.split(": it matches the logged", 1)[0])
        assert expected in [{key for key, words in NAMED.items() if words in one} for one in named], verdict.diagnosis


@pytest.mark.parametrize("name", sorted(MODES))
def test_each_mode_holds_on_one_rank(name):
    record = run_sft(MODES[name], CASE)
    assert sum(len(window) for window in record.windows) > len(record.windows), "some window accumulates"
    assert_as_expected(name, CASE, [record])


def test_each_mode_is_a_target_of_its_own():
    targets = builtin_targets()
    for name, mode in MODES.items():
        target = targets[f"trl-sft:{name}"]
        assert target.load("causal_trainer") is mode
        assert target.expect == ("fail" if transformers_trainer_defects(trl_mode=name) else "pass")
        assert target.upstream_defects == transformers_trainer_defects(trl_mode=name)


@pytest.mark.distributed
@pytest.mark.xdist_group("distributed")
def test_each_mode_holds_on_two_ranks_one_of_which_supervises_nothing(two_ranks):
    """From the session's one two-rank launch (tests/causal/conftest.py)."""
    for name in trl_modes():
        assert_as_expected(name.removeprefix("trl-sft:"), TWO_RANK_CASE, two_ranks[name])
