"""The noise the target draws: the oracle's draws, the oracle's EOS rule, the published distribution."""

from __future__ import annotations

import torch
from hypothesis import given
from hypothesis import strategies as st

from oracle.nemotron_diffusion import IGNORE_INDEX, build_tiny_model, eos_padding_rule, forward_process
from parity.compare import assert_within_budget, compare_states, compare_tensor
from tests.diffusion.properties import EOS, noise
from tests.diffusion.strategies import MASK_TOKEN_ID, window_cases



@given(case=window_cases(), eos=st.sampled_from([EOS, None]))
def test_draws_and_padding_match_the_oracle(diffusion_loss, case, eos):
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


@given(seed=st.integers(0, 2**32 - 1), eps=st.sampled_from([1e-3, 0.25]) | st.floats(1e-3, 1.0))
def test_masked_fraction_follows_p(diffusion_loss, seed, eps):
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
    assert_within_budget(
        [compare_tensor("single-batch loss", loss, [expected], expected)]
        + compare_states(grads, [expected_grads], expected_grads)
    )
