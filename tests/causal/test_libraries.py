"""The field's own loops judged as they ship (docs/causal-lm.md, The field's own loops): litgpt's finetune ``fit``,
torchtune's full-finetune recipe ``train()`` and torchtitan's ``Trainer.train_step``, each given the verdict its
source predicts. Each test skips, naming the install, where its library is absent (tests/optional_parts.py).

All of it is the ``long`` run (and ``tox -e torchtitan``): the installed ones launched once, on one rank, on a case
whose rows are uneven but never supervise a row's first label or leave a microbatch empty (litgpt is named
per-microbatch means, torchtune and torchtitan hold); two ranks; the own-count setting declined; and each library's
corner: torchtune's count before the shift and its NaN, torchtitan's raise on a window that supervises nothing.
"""

from __future__ import annotations

import json

import pytest

from parity.training.launch.processes import RankFailed, launch
from tests.optional_parts import OPTIONAL_PARTS

#: Every check here is in the long run: a launch that imports litgpt, Lightning and torchtune costs 7 s of the default
#: run's 90 (docs/benchmarks.md, The suite's own time); a loop target launched on its ranks keeps its class in the
#: default run through megatron's schedule (tests/causal/test_loops.py). The two-rank launches join the distributed
#: group (one two-rank launch at a time on two cores); the one-rank one runs beside it.
pytestmark = [pytest.mark.distributed, pytest.mark.long]
TWO_RANKS = pytest.mark.xdist_group("distributed")

LITGPT, TORCHTUNE, TORCHTITAN = "litgpt:fit", "torchtune:full-finetune", "torchtitan:train-step"
#: One window of two microbatches of two rows (data seed 0): counts uneven, no first label supervised, none empty.
UNEVEN = {"window_size": 2, "steps": 1, "rows_per_microbatch": 2}
#: The same on two ranks (max_length 8, data seed 0): supervised counts 8, 3 on rank 0 and 5, 7 on rank 1.
UNEVEN_TWO = {**UNEVEN, "max_length": 8}
#: Data seed 1: a row's first label supervised (counted before the shift, never predicted), no microbatch empty.
FIRST_LABEL = {**UNEVEN, "data_seed": 1}
#: Data seed 3: a microbatch that supervises nothing, no first label supervised.
EMPTY_MICROBATCH = {**UNEVEN, "data_seed": 3}
PER_MICROBATCH = "each microbatch's own mean (its CE sum / its own supervised count), averaged over the window"


def installed(*targets: str) -> list[str]:
    return [target for target in targets if OPTIONAL_PARTS[target.partition(":")[0]][0]()]


def verdicts(world_size: int, case: dict, targets) -> dict[str, dict]:
    """Each target's verdict as rank 0 of one launch printed it (``parity.training.causal.drivers.loop_ranks``)."""
    if not targets:
        return {}
    args = [*(f"--target={name}" for name in targets), "--case", json.dumps(case)]
    out = launch("parity.training.causal.drivers.loop_ranks", args, world_size, timeout_s=240)
    return {v["loop"]: v for v in (json.loads(line) for line in out[0].splitlines() if line.startswith("{"))}


@pytest.fixture(scope="module")
def one_rank() -> dict[str, dict]:
    return verdicts(1, UNEVEN, installed(LITGPT, TORCHTUNE, TORCHTITAN))


@pytest.mark.needs("litgpt")
def test_litgpt_s_fit_is_named_per_microbatch_means(one_rank):
    """litgpt/finetune/full.py:284-285: each microbatch's own mean divided by the accumulation iterations."""
    verdict = one_rank[LITGPT]
    assert not verdict["holds"] and verdict["kinds"] == ["normalisation"], verdict
    assert f"this run computes {PER_MICROBATCH}" in verdict["diagnosis"], verdict
    assert "litgpt.finetune.full.validate: skipped" in verdict["diagnosis"], "what was swapped is said"
    assert verdict["model"] == "parity.training.causal.drivers.libraries.litgpt_fit:tiny_gpt", "litgpt's own GPT"


@pytest.mark.needs("torchtune")
def test_torchtune_s_recipe_holds_where_no_first_label_is_supervised(one_rank):
    """The count before the shift (recipe 778-781) equals the count after it on these rows, so the recipe's
    mean-times-count (802) over the window's count (829) is the window rule."""
    verdict = one_rank[TORCHTUNE]
    assert verdict["holds"], verdict
    assert "torchtune/training/memory.py:51-52" in verdict["diagnosis"], "the CPU no-ops are said"
    assert verdict["model"] == "parity.training.causal.drivers.libraries.torchtune_recipe:tiny_llama3", "its own model"


@pytest.mark.needs("torchtitan")
def test_torchtitan_s_train_step_holds(one_rank):
    verdict = one_rank[TORCHTITAN]
    assert verdict["holds"], verdict
    assert "max_norm = 1e30" in verdict["diagnosis"], "the clipping set out of reach is said"


@TWO_RANKS
@pytest.mark.needs("litgpt", "torchtune", "torchtitan")
def test_on_two_ranks_each_library_gets_the_verdict_its_source_predicts():
    """Ranks counting 8, 3 and 5, 7: litgpt averages four per-microbatch means over Fabric's DDP; torchtune's
    all-reduced count and ``world_size / num_tokens`` and torchtitan's summed count over summed gradients are the rule."""
    got = verdicts(2, UNEVEN_TWO, [LITGPT, TORCHTUNE, TORCHTITAN])
    assert not got[LITGPT]["holds"] and PER_MICROBATCH in got[LITGPT]["diagnosis"], got[LITGPT]
    assert "Fabric strategy 'ddp'" in got[LITGPT]["diagnosis"], "the strategy swapped on a CPU is said"
    assert got[TORCHTUNE]["holds"], got[TORCHTUNE]
    assert got[TORCHTITAN]["holds"], got[TORCHTITAN]
    assert "set_force_sum_reduction_for_comms" in got[TORCHTITAN]["diagnosis"], "the Gloo sum is said"


@TWO_RANKS
@pytest.mark.needs("litgpt", "torchtune", "torchtitan")
def test_each_rank_s_own_count_is_declined_by_all_three():
    """None of the three can be told to divide by a rank's own count: each ``supports`` only the count over every rank."""
    got = verdicts(2, {**UNEVEN_TWO, "average_tokens_across_devices": False}, [LITGPT, TORCHTUNE, TORCHTITAN])
    for name in (LITGPT, TORCHTUNE, TORCHTITAN):
        assert "average_tokens_across_devices in (True,) only, as its supports declares" in got[name]["declined"], got


@pytest.mark.needs("torchtune")
def test_torchtune_weighs_each_microbatch_by_its_count_before_the_shift_over_after():
    """A row's first label supervised: microbatch 0 counts 2 after the shift and 2 before, microbatch 1 counts 6 and
    7, the window 8 and 9. The recipe's weight of microbatch g is (before_g / after_g) / 9 where the rule's is 1 / 8
    (8/9 and 56/54 of the rule's): named as the recipe's rule, with its lines."""
    verdict = verdicts(1, FIRST_LABEL, [TORCHTUNE])[TORCHTUNE]
    assert not verdict["holds"] and "normalisation" in verdict["kinds"], verdict
    assert verdict["diagnosis"].startswith("this run computes each microbatch's mean after the shift times its count "
                                           "before it"), verdict
    assert "recipes/full_finetune_distributed.py:778-829" in verdict["diagnosis"], verdict


@pytest.mark.needs("torchtune")
def test_torchtune_logs_nan_when_a_microbatch_supervises_nothing():
    """CEWithChunkedOutputLoss divides by the microbatch's count (ce_chunked_output_loss.py:83): 0/0 in running_loss."""
    verdict = verdicts(1, EMPTY_MICROBATCH, [TORCHTUNE])[TORCHTUNE]
    assert not verdict["holds"], verdict
    assert "a microbatch that supervises nothing yields NaN" in verdict["diagnosis"], verdict
    assert "only the loss the run logs is NaN, every gradient it was handed follows the window rule" in (
        verdict["diagnosis"]), "its gradients keep the rule (recipe 802-829): the NaN is the logged loss's alone"


@pytest.mark.needs("torchtitan")
def test_torchtitan_raises_on_a_window_that_supervises_nothing():
    """trainer.py:994-998: the logged 0/0 raises, after the optimizer stepped with the rule's zero gradient."""
    with pytest.raises(RankFailed, match="Loss is not finite"):
        verdicts(1, {"window_size": 2, "steps": 1, "rows_per_microbatch": 1, "empty_ranks": [0]}, [TORCHTITAN])


@pytest.mark.needs("torchtitan")
def test_the_suite_says_torchtitan_s_declared_raise_and_searches_on():
    """The property's check on that window: the raise is one torchtitan's target declares (``known_crashes``), so it
    is a note, never a failure, and the other cases are still judged."""
    from parity.table.checks.causal import check_causal_loop
    from parity.targets import get_target
    from parity.training.causal.record import CausalCase

    target = get_target(TORCHTITAN)
    case = CausalCase(window_size=2, steps=1, rows_per_microbatch=1, empty_ranks=(0,))
    [note] = check_causal_loop(target.load("loop"), case, target)
    assert note.startswith("crashed as it declares: the target raised on a rank") and "torchtitan/trainer.py:" in note
