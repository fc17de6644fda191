"""Input-contract findings: what the model received, or what a collator served, is not the rows under the
EOS rule (docs/trainer.md, Reading an input-contract finding). Named as their own kind with the first
differing position, never as noise; and a finding in evaluation leaves training judged, and a wrong
training objective named (docs/trainer.md, Naming the objective)."""

from __future__ import annotations

from dataclasses import replace

import torch

from impl.logits_trainer import LogitsDiffusionTrainer
from parity.compare import KINDS, ParityFailure
from parity.strategies.training import UPSTREAM_RUN
from parity.training.diffusion.drivers.input_contract import labels_shifted, received_differs, served_batch_differs
from parity.training.diffusion.drivers.trainer_run import pad_collate, run_trainer
from parity.training.diffusion.drivers.window_cases import tiny_model
from parity.training.diffusion.verdict import trainer_verdict
from parity.training.shipped import tiny_tokenizer
from tests.training.objective_twins import SupervisedSumTrainer
from tests.training.research_trainer import EosPaddingCollator
from tests.training.test_objectives import TELLS_OBJECTIVES_APART, words

EOS, MASK, BOS = 11, 96, 1
ROWS = [{"input_ids": [5, 6, 7], "labels": [-100, 6, 7]}, {"input_ids": [8, 9], "labels": [-100, -100]}]


def test_a_prepended_token_is_named_with_its_id():
    batch = torch.tensor([[5, 6, 7], [8, 9, 11]])
    received = torch.cat([torch.full((2, 1), BOS), torch.where(torch.tensor([[0, 1, 0], [0, 0, 0]]).bool(), MASK, batch)], 1)
    assert received_differs(received, batch, MASK) == (
        "the model received ids of shape (2, 4) for a batch of (2, 3): 1 token (id 1 in row 0) prepended to every row")
    assert received_differs(batch[:, :2], batch, MASK).endswith("the batch's first 2 positions, truncated")
    assert received_differs(batch, batch, MASK) is None


def test_labels_shifted_to_the_next_token_are_named_at_their_first_position():
    targets = torch.tensor([[-100, 6, 7, 11]])
    shifted = torch.tensor([[6, 7, 11, -100]])
    assert labels_shifted(shifted, targets) == ("the labels the model was given are the batch's shifted left by one (the "
                                                "next-token convention), first at row 0 position 0 (6 given, -100 in the batch)")
    assert labels_shifted(targets, targets) is None and labels_shifted(torch.full_like(targets, -100), targets) is None


def test_a_collator_is_held_to_its_rows_under_the_eos_rule():
    assert served_batch_differs(ROWS, pad_collate(ROWS), EOS) is None
    assert served_batch_differs(ROWS, EosPaddingCollator(tiny_tokenizer(tiny_model(0, torch.float32).config))(ROWS), EOS) is None
    no_eos = {"input_ids": torch.tensor([[5, 6, 7], [8, 9, 0]]), "labels": torch.tensor([[-100, 6, 7], [-100, -100, -100]])}
    assert served_batch_differs(ROWS, no_eos, EOS) == (
        "the collator's batch, under the EOS rule, is not its rows under the EOS rule: the model's ids differ, first at "
        "row 1 position 2 (0 served, 11 expected)")
    left = {"input_ids": torch.tensor([[5, 6, 7], [0, 8, 9]]), "attention_mask": torch.tensor([[1, 1, 1], [0, 1, 1]]),
            "labels": torch.tensor([[-100, 6, 7], [-100, -100, -100]])}
    assert "first at row 1 position 0 (11 served, 8 expected)" in served_batch_differs(ROWS, left, EOS)


class EvaluationPrependsBos(SupervisedSumTrainer):
    """In training, each microbatch divided by its supervised tokens; in evaluation, BOS prepended to
    every row (an autoregressive habit): two findings, neither hiding the other."""

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        if not model.training:
            ones = inputs["input_ids"].new_ones((inputs["input_ids"].shape[0], 1))
            inputs = {"input_ids": torch.cat([ones * BOS, inputs["input_ids"]], 1),
                      "attention_mask": torch.cat([ones, inputs["attention_mask"]], 1),
                      "labels": torch.cat([ones * -100, inputs["labels"]], 1)}
        return super().compute_loss(model, inputs, return_outputs, num_items_in_batch)


def test_an_input_contract_finding_in_evaluation_leaves_training_judged_and_its_objective_named(tmp_path):
    """(On the objective test's first window, evaluated in two batches of two rows.)"""
    assert "input-contract" in KINDS
    case = replace(TELLS_OBJECTIVES_APART, examples_per_rank=4, prompt_only_rows=(1,), evaluate=True, eval_batch_size=2)
    record = run_trainer(EvaluationPrependsBos, case, str(tmp_path))
    verdict = trainer_verdict(case, [record])
    assert verdict.failure_kinds == ["normalisation", "input-contract"] and record.windows == [2]
    assert {f.kind for f in verdict.findings} == {"input-contract"} and {f.phase for f in verdict.findings} == {"evaluation"}
    assert "1 token (id 1 in row 0) prepended to every row" in verdict.findings[0].message
    assert {c.step for c in verdict.comparisons if c.step is not None} == {0}, "training is compared"
    assert not any(c.quantity in ("eval loss", "batch loss") for c in verdict.comparisons), "evaluation is not"
    assert verdict.diagnosis.startswith(f"this trainer computes {words('supervised, summed')}:"), verdict.diagnosis
    assert str(ParityFailure(verdict)).startswith(f"normalisation, input-contract: {verdict.diagnosis}\n"), "it leads"


class EvaluationPaddingAsPad(LogitsDiffusionTrainer):
    """Trains under the EOS rule, and evaluates with the padding left as the collator served it."""

    def _maskable(self, batch):
        if self.model.training:
            return super()._maskable(batch)
        ids, labels, attention = batch["input_ids"], batch["labels"], batch["attention_mask"]
        return ids, labels, attention.bool() & (labels != -100)


def test_padding_left_as_pad_in_evaluation_is_an_input_contract_finding_there_not_noise(tmp_path):
    record = run_trainer(EvaluationPaddingAsPad, UPSTREAM_RUN, str(tmp_path))
    kinds = {(finding.kind, finding.phase) for finding in record.findings}
    assert kinds == {("input-contract", "evaluation")}, record.findings
    assert "padding positions as the collator served them (id 0 at row 1" in record.findings[0].message
    assert "not as EOS (11) under the EOS rule" in record.findings[0].message
    verdict = trainer_verdict(UPSTREAM_RUN, [record])
    assert verdict.failure_kinds == ["input-contract"] and record.judged("train")  # training is still judged, and holds
