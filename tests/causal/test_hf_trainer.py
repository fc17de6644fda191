"""``transformers.Trainer`` training a causal LM, judged by the window rule (docs/causal-lm.md, Trainers and their
contract per release): impl's windowed trainer and transformers' own Trainer (the model's loss) hold on one rank
and two, over accumulation 1 to 4, a microbatch or a rank that supervises nothing, packed rows, each rank's own
count, float32 and bfloat16; impl's pre-fix twin is named per-microbatch means, what every Trainer computed before 4.46.

The default run holds one small case of each on one rank and one two-rank launch; ``-m long`` the rest.
"""

from __future__ import annotations

import pytest
import torch
from transformers import Trainer

from impl.causal_trainer import WindowedCausalTrainer
from impl.known_bugs.causal_local_mean_trainer import CausalLocalMeanTrainer
from oracle.causal_lm import IGNORE_INDEX, Document, Row, tiny_causal_lm, window_loss
from parity.contracts import TargetContractError, checked_interface
from parity.safety.releases import transformers_trainer_defects
from parity.targets import Target, get_target
from parity.training.causal.drivers.batches import collate_rows
from parity.training.causal.drivers.hf_trainer import run_hf_trainer
from parity.training.causal.drivers.ranks import run_on_ranks
from parity.training.causal.record import CausalCase, CausalRecord, step_windows
from parity.training.causal.verdict import causal_verdict
from parity.training.launch.processes import RankFailed
from tests.causal.conftest import DRIVER, TWO_RANK_CASE, counts, on_corners

IMPL = "impl.causal_trainer:WindowedCausalTrainer"
PLAIN = "transformers:Trainer"
TWIN = "impl.known_bugs.causal_local_mean_trainer:CausalLocalMeanTrainer"
#: The objective the twin computes, as the verdict words it (parity.training.causal.objectives).
PER_MICROBATCH = "each microbatch's own mean (its CE sum / its own supervised count), averaged over the window's microbatches"
TRAINERS = {"impl": WindowedCausalTrainer, "transformers": Trainer}
#: transformers 5.5.0 to 5.5.3 divide every window of more than one microbatch again in accelerate's backward.
DIVIDES_TWICE = any("accelerate's backward" in defect for defect in transformers_trainer_defects())


def assert_holds(case: CausalCase, records: list[CausalRecord]) -> None:
    verdict = causal_verdict(case, records)
    assert verdict.holds, verdict.describe(3)


# --- the default run --------------------------------------------------------------------------------------------


def test_impl_holds_over_a_window_whose_first_microbatch_supervises_nothing():
    case = CausalCase(window_size=3, steps=1, rows_per_microbatch=2, max_length=6, data_seed=5)
    record = run_hf_trainer(WindowedCausalTrainer, case)
    assert counts(record) == [[0, 8, 3]]
    assert_holds(case, [record])


def test_the_pre_fix_twin_is_named_per_microbatch_means():
    case = CausalCase(window_size=2, steps=1, rows_per_microbatch=1, max_length=6)
    record = run_hf_trainer(CausalLocalMeanTrainer, case)
    assert counts(record) == [[5, 4]]
    verdict = causal_verdict(case, [record])
    assert verdict.failure_kinds == ["normalisation"] and PER_MICROBATCH in verdict.diagnosis, verdict.describe(3)
    assert "transformers before 4.46" in verdict.diagnosis


#: A row whose first label is supervised, as a collator that copies the ids into the labels serves it: nothing
#: predicts it, so a Trainer that counts labels != -100 before the shift (transformers 5.5 to 5.9) miscounts.
FIRST_LABEL_SUPERVISED = [[[[Row((Document((5, 6, 7, 8), (5, 6, 7, 8)),))],
                            [Row((Document((9, 10, 11), (IGNORE_INDEX, 10, 11)),))]]]]


#: Packed rows, a later document's first label served -100 (the count before the shift on the labels as served).
PACKED_CASE = CausalCase(window_size=2, steps=1, rows_per_microbatch=2, max_length=8, packed=True, data_seed=0)


#: A last window of one microbatch of three, a row's first label supervised (data seed 5): accelerate divides it by
#: the configured 3 steps too.
PARTIAL_CASE = CausalCase(window_size=3, steps=2, rows_per_microbatch=1, last_window=1, data_seed=5)


@pytest.mark.parametrize(("case", "rows"), [(CausalCase(window_size=2, steps=1, rows_per_microbatch=1),
                                             FIRST_LABEL_SUPERVISED), (PACKED_CASE, None), (PARTIAL_CASE, None)],
                         ids=["unpacked", "packed", "partial-last-window"])
def test_transformers_own_trainer_is_judged_by_its_release_s_count(case, rows):
    """Where the installed release counts after the shift (5.10 on) the plain Trainer holds; before, each defect of
    its release is named, on packed rows too: the count before the shift (5.5 to 5.9), and accelerate's second
    division of the gradients by the configured steps (5.5.0 to 5.5.3)."""
    verdict = causal_verdict(case, [run_hf_trainer(Trainer, case, rows=rows)])
    defects = transformers_trainer_defects()
    assert verdict.holds == (not defects), verdict.describe(3)
    if defects:
        assert verdict.diagnosis.startswith("this run computes the window's sum / the labels != -100 counted before "
                                            "the shift"), verdict.diagnosis
    again = f"its gradients then divided again by the {case.window_size} accumulation steps in accelerate's backward"
    assert (again in (verdict.diagnosis or "")) == (defects == transformers_trainer_defects("5.5.0")), verdict.diagnosis


def test_the_release_table_names_each_defect_where_it_spans():
    assert len(transformers_trainer_defects("5.5.0")) == 2
    assert transformers_trainer_defects("5.5.4") == transformers_trainer_defects("5.9.0")
    assert [len(transformers_trainer_defects(v)) for v in ("5.10.1", "5.19.0", "5.25.0")] == [0, 0, 0]
    plain = get_target("transformers-trainer")
    assert plain.expect == ("fail" if plain.upstream_defects else "pass")


def test_a_packed_row_keeps_only_its_first_document_s_first_label():
    row = Row((Document((5, 6, 7), (5, 6, 7)), Document((8, 9), (8, 9))))
    packed = collate_rows([row], packed=True)
    assert packed["labels"].tolist() == [[5, 6, 7, IGNORE_INDEX, 9]]
    assert packed["position_ids"].tolist() == [[0, 1, 2, 0, 1]] and packed["use_cache"] is False
    assert "attention_mask" not in packed


def test_a_row_of_several_documents_is_served_apart_in_an_unpacked_case_too():
    """A GPT sample split at its EODs (reset_attention_mask) is a row of several documents in any case: an
    attention mask over it would let the second attend to the first (a false alarm a nightly search found)."""
    split, single = Row((Document((5, 6, 7), (5, 6, 7)), Document((8, 9), (8, 9)))), Row((Document((4, 3), (4, 3)),))
    plain = collate_rows([split, single], packed=False)
    assert plain["use_cache"] is False and "attention_mask" not in plain
    assert plain["labels"].tolist() == [[5, 6, 7, IGNORE_INDEX, 9], [4, 3, IGNORE_INDEX, IGNORE_INDEX, IGNORE_INDEX]]
    assert plain["position_ids"].tolist() == [[0, 1, 2, 0, 1], [0, 1, 0, 1, 2]]
    assert collate_rows([single], packed=False)["attention_mask"].tolist() == [[1, 1]]


def test_a_causal_trainer_target_must_be_a_trainer_subclass():
    assert checked_interface(get_target("known-bug:causal-local-mean"), "causal_trainer") is CausalLocalMeanTrainer
    wrong = Target(name="not-a-trainer", description="a loss", expect="pass", causal_trainer="impl.diffusion_loss:WINDOWED_LOSS")
    with pytest.raises(TargetContractError, match="a causal_trainer target is a transformers.Trainer subclass"):
        checked_interface(wrong, "causal_trainer")


class Crashing(Trainer):
    """A trainer that raises in its first ``compute_loss``."""

    def compute_loss(self, *args, **kwargs):
        raise RuntimeError("planted")


def test_a_trainer_that_raises_is_a_crash_finding():
    case = CausalCase(window_size=2, steps=1)
    verdict = causal_verdict(case, [run_hf_trainer(Crashing, case)])
    assert verdict.failure_kinds == ["crash"] and "RuntimeError: planted" in verdict.describe(1)


@pytest.mark.distributed
@pytest.mark.xdist_group("distributed")
def test_impl_holds_on_two_ranks_one_of_which_supervises_nothing(two_ranks):
    records = two_ranks["impl"]
    assert [counts(record) for record in records] == [[[1, 4]], [[0, 0]]]
    assert_holds(TWO_RANK_CASE, records)


@pytest.mark.distributed
@pytest.mark.xdist_group("distributed")
@pytest.mark.usefixtures("harness_self_check")
def test_impl_holds_on_every_two_rank_corner_and_its_unsummed_twin_fails_where_both_ranks_supervise():
    """The session's one causal launch: impl holds where both ranks supervise, one is empty, each keeps its own
    count, packed in bfloat16; the planted twin that never sums its count (its world factor kept) holds where one
    rank is empty and fails wherever both supervise with the count over every rank asked."""
    for case, records in on_corners("impl").items():
        assert_holds(case, records)
    for case, records in on_corners("UNSUMMED").items():
        verdict = causal_verdict(case, records)
        both = case.average_tokens_across_devices and not case.empty_ranks
        assert verdict.holds != both, (case, verdict.describe(3))


# --- the long run -----------------------------------------------------------------------------------------------


@pytest.mark.long
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("packed", [False, True], ids=["padded", "packed"])
@pytest.mark.parametrize("window_size", [1, 2, 3, 4])
@pytest.mark.parametrize("name", sorted(TRAINERS))
def test_both_trainers_hold_on_one_rank(name, window_size, packed, dtype):
    case = CausalCase(window_size=window_size, steps=2, rows_per_microbatch=2, max_length=8, packed=packed,
                      data_seed=window_size, dtype=dtype)
    verdict = causal_verdict(case, [run_hf_trainer(TRAINERS[name], case)])
    assert verdict.holds == (name == "impl" or window_size == 1 or not DIVIDES_TWICE), verdict.describe(3)


def rank_local_golden_holds(case: CausalCase, records: list[CausalRecord]) -> None:
    """``average_tokens_across_devices=False``: each rank's window sum over its own count, the ranks' gradients
    averaged, in float64 from the weights before each step (the verdict's golden is the count over every rank)."""
    model = tiny_causal_lm(case.model_seed, torch.float64)
    for k, ranks in enumerate(step_windows(records)):
        if k:
            with torch.no_grad():
                for name, parameter in model.named_parameters():
                    parameter.copy_(records[0].steps[k - 1].params[name].to(torch.float64))
        model.zero_grad(set_to_none=True)
        loss = sum(window_loss(model, [microbatches]) for microbatches in ranks) / len(ranks)
        loss.backward()
        for record in records:
            assert float(record.steps[k].loss) == pytest.approx(float(loss), rel=1e-5)
            for name, parameter in model.named_parameters():
                got = record.steps[k].grads[name]
                torch.testing.assert_close(got.to(torch.float64), parameter.grad, rtol=1e-4, atol=1e-6)


@pytest.mark.long
@pytest.mark.distributed
@pytest.mark.xdist_group("distributed")
def test_both_trainers_hold_on_two_ranks():
    packed = CausalCase(window_size=3, steps=2, rows_per_microbatch=2, max_length=8, packed=True, world_size=2,
                        empty_ranks=(0,))
    trainers = [IMPL] if DIVIDES_TWICE else [IMPL, PLAIN]
    for records in run_on_ranks(DRIVER, trainers, packed, timeout_s=300):
        assert_holds(packed, records)
    own = CausalCase(window_size=3, steps=2, rows_per_microbatch=1, world_size=2, average_tokens_across_devices=False,
                     data_seed=3)
    for records in run_on_ranks(DRIVER, trainers, own, timeout_s=300):
        rank_local_golden_holds(own, records)


@pytest.mark.long
@pytest.mark.distributed
@pytest.mark.xdist_group("distributed")
def test_the_pre_fix_twin_is_named_on_two_ranks():
    case = CausalCase(window_size=2, steps=1, rows_per_microbatch=1, max_length=6, world_size=2)
    [records] = run_on_ranks(DRIVER, [TWIN], case, timeout_s=150)
    verdict = causal_verdict(case, records)
    assert verdict.failure_kinds == ["normalisation"] and PER_MICROBATCH in verdict.diagnosis, verdict.describe(3)


@pytest.mark.long
@pytest.mark.distributed
@pytest.mark.xdist_group("distributed")
def test_a_rank_whose_trainer_raises_ends_the_launch_naming_the_crash():
    with pytest.raises(RankFailed, match=r"crashed: RuntimeError: planted at tests/causal/test_hf_trainer.py"):
        run_on_ranks(DRIVER, ["tests.causal.test_hf_trainer:Crashing"], CausalCase(window_size=2, steps=1, world_size=2), timeout_s=150)
