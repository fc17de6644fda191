"""The noise a loss target draws, by example: the EOS rule as its manual states it, the 1/p weighting.

The randomised noise properties (draws equal the oracle's, the masked fraction follows p) are
records of the property table (parity/table/rows/).
"""

from __future__ import annotations

import torch

from oracle.nemotron_diffusion import IGNORE_INDEX, build_tiny_model
from parity.budget import compare_states, compare_tensor
from parity.cases import EOS, MASK_TOKEN_ID, SEED_SCENARIO
from parity.compare import assert_verdict, judge
from parity.table.checks.diffusion import noise
from parity.training.diffusion.drivers.window_cases import parity_run


def test_eos_rule_reads_like_its_manual(diffusion_loss):
    """Padding becomes attended EOS; a supervised EOS target only in rows that have a response."""
    ids = torch.tensor([[5, 6, 7, 0, 0], [5, 6, 7, 8, 0]])
    attention = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 0]])
    labels = torch.tensor([[IGNORE_INDEX, 6, 7, IGNORE_INDEX, IGNORE_INDEX], [IGNORE_INDEX] * 5])
    window = [{"input_ids": ids, "attention_mask": attention, "labels": labels}]
    (out,) = noise(diffusion_loss, window, eps=1.0, generator=torch.Generator().manual_seed(0))  # eps 1: mask all maskable
    assert out["attention_mask"] is None
    assert out["input_ids"].tolist() == [[5, 6, 7, EOS, EOS], [5, 6, 7, 8, EOS]]
    assert out["masked_indices"].tolist() == [[False, True, True, True, True], [False] * 5]
    assert out["labels"][0].tolist() == [IGNORE_INDEX, 6, 7, EOS, EOS]

    (unlabelled,) = noise(diffusion_loss, [{"input_ids": ids, "attention_mask": attention}], eps=1.0)
    assert unlabelled["masked_indices"].tolist() == attention.bool().tolist(), "without labels padding is never masked"


def test_single_batch_loss_weights_by_inverse_p(diffusion_loss):
    """A direct call without a window count: ``sum CE / p`` over the microbatch's own count, and its gradients."""
    model = build_tiny_model(0, torch.float64)
    ids = torch.randint(0, MASK_TOKEN_ID, (3, 9), generator=torch.Generator().manual_seed(1))
    (noised,) = noise(diffusion_loss, [{"input_ids": ids}], eps=0.3, generator=torch.Generator().manual_seed(2))
    loss = diffusion_loss.microbatch_loss(model, noised)

    masked = noised["masked_indices"]
    logits = model(input_ids=torch.where(masked, MASK_TOKEN_ID, ids)).logits
    log_probs = logits.log_softmax(-1).gather(-1, ids[..., None])[..., 0]
    expected = (-log_probs[masked] / noised["p_mask"][masked]).sum() / masked.sum()
    assert masked.any()
    names, parameters = zip(*model.named_parameters(), strict=True)
    grads = dict(zip(names, torch.autograd.grad(loss, parameters, retain_graph=True), strict=True))
    expected_grads = dict(zip(names, torch.autograd.grad(expected, parameters), strict=True))
    assert_verdict(
        judge(
            [compare_tensor("single-batch loss", loss, [expected], expected)]
            + compare_states(grads, [expected_grads], expected_grads)
        )
    )


def test_seed_scenario_realizes_its_counts(diffusion_loss):
    """The pull request's case: two answers of equal length, realized mask counts 7 and 10."""
    run = parity_run(diffusion_loss, SEED_SCENARIO)
    answers = [int((batch["labels"] != -100).sum()) for batch in SEED_SCENARIO.windows[0]]
    assert answers[0] == answers[1]
    assert [int(batch["masked_indices"].sum()) for batch in run.noised[0]] == [7, 10]
