"""The masked-diffusion properties, each written once against the loss-target interface.

Plain check functions of ``(loss_target, **arguments)``; the property table
(parity/table/rows/) gives them their strategies, examples and the known bugs they catch, and
everything that runs properties reads it.
"""

from __future__ import annotations

import math

import torch
from hypothesis import event
from hypothesis import target as hypothesis_target
from hypothesis.control import currently_in_test_context

from oracle.nemotron_diffusion import eos_padding_rule, forward_process
from parity.budget import NOT_INFORMATIVE_EVENT
from parity.cases import EOS, MASK_TOKEN_ID, PUBLISHED_EPS, VOCAB, WindowCase
from parity.compare import assert_verdict, judge
from parity.training.diffusion.drivers.window_cases import parity_run
from parity.training.diffusion.drivers.window_run import ParityRun


def noise(diffusion_loss, window, **overrides):
    """``prepare_window`` with the tiny model's ids and the published ``eps``, unless overridden."""
    arguments = dict(
        mask_token_id=MASK_TOKEN_ID, eos_token_id=EOS, eps=PUBLISHED_EPS, generator=torch.Generator(), vocab_size=VOCAB
    )
    return diffusion_loss.prepare_window(window, **{**arguments, **overrides})


def hold_to_budget(run: ParityRun) -> list[str]:
    """Raises ``ParityFailure`` outside the budget; returns the notes of a passing verdict (a bfloat16
    case that cannot tell a wrong count from rounding says so, docs/budget.md). Inside a search, such a
    case is one of many drawn: it is counted (a Hypothesis event), not a note of the property."""
    comparisons = run.comparisons()
    searching = currently_in_test_context()
    if searching:
        worst = max(c.ratio for c in comparisons)
        hypothesis_target(worst if math.isfinite(worst) else 1e300, label="worst error / budget")
    verdict = assert_verdict(judge(comparisons, run.findings(), uninformative=run.uninformative()))
    if verdict.uninformative and searching:
        event(NOT_INFORMATIVE_EVENT)
        return []
    return [verdict.uninformative] if verdict.uninformative else []


def check_window_parity(loss_target, case: WindowCase, device: str = "cpu") -> list[str]:
    """Loss, every gradient, every parameter after every SGD step: within the oracle's budget."""
    return hold_to_budget(parity_run(loss_target, case, device))


def check_regrouping(loss_target, case: WindowCase, rows_per_microbatch: int, device: str = "cpu") -> list[str]:
    """Re-cutting a window's rows into other microbatches leaves the step where the oracle puts it."""
    return hold_to_budget(parity_run(loss_target, case, device, regroup=rows_per_microbatch))


def check_empty_window_is_a_finite_zero(loss_target, case: WindowCase, device: str = "cpu") -> list[str]:
    """No masked token anywhere: a zero loss that still backpropagates, zero gradients, no NaN."""
    run = parity_run(loss_target, case, device)
    empty = [i for i, window in enumerate(run.noised) if not any(b["masked_indices"].any() for b in window)]
    assert empty, "the case was drawn to hold an empty window"
    for step in empty:
        result = run.out[step]
        assert torch.isfinite(result.loss) and result.loss == 0, f"window {step}: loss {result.loss}"
        for name, grad in result.grads.items():
            assert grad is not None or name.startswith("diffusion_head") and case.frozen_head, f"{name}: no grad path"
            if grad is not None:
                assert torch.count_nonzero(grad) == 0, f"window {step}: {name} has a non-zero gradient"
    return hold_to_budget(run)


def check_draws_match_the_oracle(diffusion_loss, case: WindowCase, eos: int | None) -> None:
    """Same seed, same draw order: the oracle's EOS rule and ``forward_process`` give this batch, bit for bit."""
    target_generator = torch.Generator().manual_seed(case.noise_seed)
    oracle_generator = torch.Generator().manual_seed(case.noise_seed)
    for window in case.windows:
        noised = noise(diffusion_loss, window, eps=case.eps, generator=target_generator, eos_token_id=eos)
        for batch, out in zip(window, noised, strict=True):
            ids, targets, maskable, run_mask = eos_padding_rule(
                batch["input_ids"], batch.get("attention_mask"), batch.get("labels"), eos
            )
            _, masked, p_mask = forward_process(ids, MASK_TOKEN_ID, case.eps, maskable, oracle_generator)
            assert torch.equal(out["input_ids"], ids), "model inputs differ from the EOS rule's"
            assert torch.equal(out["labels"], targets), "targets differ from the EOS rule's"
            assert (out["attention_mask"] is None) == (run_mask is None), "padding attended differently"
            if run_mask is not None:
                assert torch.equal(out["attention_mask"], run_mask)
            assert not (out["masked_indices"] & ~maskable).any(), "a position outside the maskable set was masked"
            assert torch.equal(out["masked_indices"], masked), "masks differ from the oracle's draws"
            assert torch.equal(out["p_mask"], p_mask), "p differs from the oracle's draws"


def check_masked_fraction_follows_p(diffusion_loss, seed: int, eps: float) -> None:
    """Per row, ``p`` is constant in ``[eps, 1]`` and the masked count is Binomial(length, p) (6 sigma)."""
    length = 4096
    window = [{"input_ids": torch.randint(0, MASK_TOKEN_ID, (4, length), generator=torch.Generator().manual_seed(seed))}]
    (out,) = noise(diffusion_loss, window, eps=eps, generator=torch.Generator().manual_seed(seed))
    p = out["p_mask"][:, 0]
    assert torch.equal(out["p_mask"], p[:, None].expand_as(out["p_mask"])), "p must be one value per row"
    assert ((p >= torch.tensor(eps, dtype=p.dtype)) & (p <= 1)).all(), "p = (1 - eps) t + eps lies in [eps, 1]"
    counts = out["masked_indices"].sum(dim=1).double()
    sigma = (length * p.double() * (1 - p.double())).sqrt()
    assert ((counts - length * p.double()).abs() <= 6 * sigma + 1).all()
