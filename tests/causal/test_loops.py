"""Loops judged through the loop interface (docs/causal-lm.md, The loop interface; megatron-core's schedule), each
on real ranks over Gloo, every rank's gradients and parameters held to the window rule.

The default run reads the session's one two-rank launch (tests/causal/conftest.py, impl's causal trainer beside the
loops): torchtune's per-token loop under DDP must hold and
its twin that keeps each rank's own count be named rank-local; where megatron-core is installed, its schedule
with ``calculate_per_token_loss`` must hold and without it be named. The ``long`` run adds one rank, packed rows
with a rank that supervises nothing, FSDP2's ``fully_shard`` and bfloat16.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from parity.contracts import TargetContractError, preflight
from parity.targets import Target
from parity.training.causal.drivers.loop import LoopContractError, loop_declines, run_loop
from parity.training.causal.record import CausalCase
from parity.training.causal.verdict import causal_verdict
from parity.training.launch.processes import launch
from tests.causal.conftest import LOOPS, TWO_RANK_CASE, megatron_targets, on_corners
from tests.causal.loops import OWN_MODEL, OWN_MODEL_MEANS

pytestmark = [pytest.mark.distributed, pytest.mark.xdist_group("distributed")]

#: Two windows of two microbatches of one row, the ranks' counts unequal (data seed 0): a per-microbatch mean, a
#: rank's own count and the window's all differ.
SMALL = {"steps": 2, "rows_per_microbatch": 1}
#: Packed rows, three microbatches a window, rank 1 supervising nothing: rank-local (1/(2N)) is not divided-twice (1/(3N)).
PACKED = {"steps": 2, "window_size": 3, "packed": True, "empty_ranks": [1]}
PER_MICROBATCH = "per-microbatch means divided by num_microbatches, megatron's default without calculate_per_token_loss"
RANK_LOCAL = "each rank's sum / its own count, the ranks averaged"
PATCHED = 'schedules.py: the token total torch.zeros([], dtype=torch.int, device="cuda") made on the CPU'


def launched(world_size: int, case: dict, loops=(), targets=()) -> dict[str, dict]:
    """Each loop's verdict as rank 0 printed it, keyed by the loop's path or target name."""
    args = [*(f"--loop={LOOPS}:{loop}" for loop in loops), *(f"--target={name}" for name in targets),
            "--case", json.dumps(case)]
    out = launch("parity.training.causal.drivers.loop_ranks", args, world_size, timeout_s=150)
    verdicts = [json.loads(line) for line in out[0].splitlines() if line.startswith("{")]
    return {verdict["loop"].removeprefix(f"{LOOPS}:"): verdict for verdict in verdicts}


def assert_holds(verdict: dict) -> None:
    assert verdict["holds"], verdict


def assert_named(verdict: dict, words: str) -> None:
    assert verdict["kinds"] == ["normalisation"] and words in verdict["diagnosis"], verdict


def judged(records, case: CausalCase = TWO_RANK_CASE) -> dict:
    """A verdict as rank 0 of a loop launch prints it."""
    verdict = causal_verdict(case, records)
    return {"holds": verdict.holds, "kinds": verdict.failure_kinds, "diagnosis": verdict.diagnosis or ""}


@pytest.fixture(scope="module")
def loops_on_two_ranks(two_ranks) -> dict[str, dict]:
    """The loops' verdicts from the session's one two-rank launch (tests/causal/conftest.py)."""
    return {name: judged(records) for name, records in two_ranks.items() if name != "impl"}


def test_the_per_token_loop_holds_on_two_ranks_and_its_rank_local_twin_is_named(loops_on_two_ranks):
    assert_holds(loops_on_two_ranks["PER_TOKEN"])
    assert_named(loops_on_two_ranks["RANK_LOCAL"], RANK_LOCAL)


@pytest.mark.needs("megatron-core")
def test_megatron_s_schedule_holds_with_per_token_loss_and_is_named_without(loops_on_two_ranks):
    assert_named(loops_on_two_ranks["megatron-schedule"], PER_MICROBATCH)
    assert_holds(loops_on_two_ranks["megatron-schedule:per-token"])
    assert PATCHED in loops_on_two_ranks["megatron-schedule"]["diagnosis"], "the CPU patches are said"


@pytest.mark.usefixtures("harness_self_check")
def test_on_every_two_rank_corner_the_per_token_loop_holds_and_its_twin_is_rank_local():
    """Both ranks supervising in unequal numbers, one empty, each rank its own count (told through ``settings``),
    packed in bfloat16: the loop holds on each; the twin is named rank-local wherever the count over every rank was
    asked, and holds where the case asks each rank's own."""
    for case, records in on_corners("PER_TOKEN").items():
        assert_holds({**judged(records, case), "case": case})
    for case, records in on_corners("RANK_LOCAL").items():
        verdict = judged(records, case)
        if case.average_tokens_across_devices:
            words = RANK_LOCAL if not case.empty_ranks else ""  # one rank empty: divided twice, equally
            assert not verdict["holds"] and "normalisation" in verdict["kinds"] and words in verdict["diagnosis"], case
        else:
            assert_holds({**verdict, "case": case})


class _TwoRanksToldNothing:
    """A loop written before it could be told a setting: it follows the count over every rank."""

    def prepare(self, model):
        return model

    def step(self, model, optimizer, microbatches) -> float:
        return 0.0


class _OneDtype(_TwoRanksToldNothing):
    supports = {"dtype": ("float32",)}

    def step(self, model, optimizer, microbatches, *, settings) -> float:
        return 0.0


class _Unpacked(_OneDtype):
    supports = {"packed": (False,)}


def test_a_loop_is_judged_only_on_the_settings_it_follows():
    own = CausalCase(world_size=2, average_tokens_across_devices=False)
    assert "take no settings is never told it; the case asks False" in loop_declines(_TwoRanksToldNothing(), own)
    assert loop_declines(_TwoRanksToldNothing(), CausalCase(average_tokens_across_devices=False)) is None  # one rank
    assert loop_declines(_OneDtype(), own) is None  # told: it follows both counts
    assert "dtype in ('float32',) only, as its supports declares" in loop_declines(_OneDtype(), CausalCase(dtype="bfloat16"))
    assert loop_declines(_OneDtype(), CausalCase(packed=True)) is None  # undeclared: every value
    assert "packed in (False,) only, as its supports declares; the case asks True" in loop_declines(
        _Unpacked(), CausalCase(packed=True))  # a loop whose library never packs (litgpt's)
    assert loop_declines(_Unpacked(), CausalCase()) is None


class _NeverSteps:
    def prepare(self, model):
        return model

    def step(self, model, optimizer, microbatches) -> float:
        return 0.0


def test_a_loop_that_never_steps_the_optimizer_breaks_the_contract():
    with pytest.raises(LoopContractError, match="called optimizer.step\\(\\) 0 times in window 0"):
        run_loop(_NeverSteps(), CausalCase(steps=1))


def test_a_loop_that_trains_a_model_of_its_own_is_judged_on_a_float64_copy_of_that_model():
    """The oracle runs the window rule on the model class the loop trained (its ``model_builder``), not on its own
    tiny Llama: the correct loop holds, the per-microbatch mean is named (docs/causal-lm.md, The loop interface)."""
    case = CausalCase(window_size=2, steps=2, rows_per_microbatch=2, max_length=8)
    record = run_loop(OWN_MODEL, case)
    assert record.model == "tests.causal.loops:cumulative_lm" and "embed.weight" in record.steps[0].grads
    assert causal_verdict(case, [record]).holds
    bf16 = replace(case, dtype="bfloat16")  # its own model in bfloat16: the budget is the model's, no false alarm
    assert causal_verdict(bf16, [run_loop(OWN_MODEL, bf16)]).holds
    wrong = causal_verdict(case, [run_loop(OWN_MODEL_MEANS, case)])
    assert not wrong.holds and wrong.diagnosis.startswith("this run computes each microbatch's own mean"), wrong.diagnosis


class _LambdaModel(_NeverSteps):
    model_builder = staticmethod(lambda seed, dtype: None)


def test_a_model_builder_the_verdict_cannot_import_again_is_refused_before_any_run():
    with pytest.raises(LoopContractError, match="model_builder: a model builder must be a function at the top of an"):
        run_loop(_LambdaModel(), CausalCase(steps=1))


@pytest.mark.long
def test_a_loop_that_raises_on_its_rank_is_the_target_s_crash_and_one_it_declares_is_said_and_passed():
    """What a rank wrote of a loop's raise is read back as the target's crash, with where it raised; declared in the
    target's ``known_crashes`` (torchtitan's raise on an empty window), it is a note and the search goes on."""
    from parity.safety.crash import TargetCrashed
    from parity.table.checks.causal import check_causal_loop
    from tests.causal.loops import RAISES

    target = Target(name="raises", description="", expect="fail", loop="tests.causal.loops:RAISES")
    with pytest.raises(TargetCrashed) as crashed:
        check_causal_loop(RAISES, CausalCase(steps=1), target)
    assert crashed.value.signature.startswith("RuntimeError at tests/causal/loops.py:"), crashed.value.signature
    declared = Target(name="raises", description="", expect="pass", loop="tests.causal.loops:RAISES",
                      known_crashes=("RuntimeError at tests/causal/loops.py",))
    [note] = check_causal_loop(RAISES, CausalCase(steps=1), declared)
    assert note.startswith("crashed as it declares: the target raised on a rank") and "Loss is not finite" in note


def test_a_loop_target_that_is_no_loop_is_a_usage_error():
    target = Target(name="no-loop", description="", expect="pass", loop="oracle.causal_lm:Row")
    with pytest.raises(TargetContractError, match="a loop target has prepare and step .* without prepare and step"):
        preflight(target)


@pytest.mark.long
def test_on_one_rank_with_packed_rows():
    verdicts = launched(1, {**PACKED, "empty_ranks": []}, ("PER_TOKEN",), megatron_targets())
    assert_holds(verdicts["PER_TOKEN"])
    if megatron_targets():
        assert_holds(verdicts["megatron-schedule:per-token"])
        assert_named(verdicts["megatron-schedule"], PER_MICROBATCH)


@pytest.mark.long
def test_on_two_ranks_with_packed_rows_an_empty_rank_and_fully_shard():
    verdicts = launched(2, PACKED, ("PER_TOKEN", "SHARDED", "RANK_LOCAL"), megatron_targets())
    assert_holds(verdicts["PER_TOKEN"])
    assert_holds(verdicts["SHARDED"])
    assert_named(verdicts["RANK_LOCAL"], RANK_LOCAL)
    if megatron_targets():
        assert_holds(verdicts["megatron-schedule:per-token"])
        assert_named(verdicts["megatron-schedule"], PER_MICROBATCH)


@pytest.mark.long
def test_in_bfloat16_on_two_ranks():
    verdicts = launched(2, {**SMALL, "dtype": "bfloat16"}, ("PER_TOKEN", "SHARDED"), megatron_targets()[:1])
    assert all(verdict["holds"] for verdict in verdicts.values()), verdicts
