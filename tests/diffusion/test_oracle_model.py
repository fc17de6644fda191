"""The oracle model keeps the published contract (SPEC §5.1): checks of the reference itself."""

from __future__ import annotations

import torch

from oracle.nemotron_diffusion import build_tiny_model, forward_process
from parity.compare import assert_within_budget, compare_tensor

MASK = 96


def _ids(seed=0, shape=(2, 10)):
    return torch.randint(0, MASK, shape, generator=torch.Generator().manual_seed(seed))


def test_attention_is_bidirectional():
    model = build_tiny_model(0).eval()
    ids = _ids()
    edited = ids.clone()
    edited[:, -1] = (edited[:, -1] + 1) % MASK
    with torch.no_grad():
        assert not torch.equal(model.logits(ids)[:, 0], model.logits(edited)[:, 0]), "the last token must reach the first"


def test_forward_returns_the_sum_and_the_count():
    model = build_tiny_model(0, torch.float64)
    ids = _ids(1)
    _, masked, p_mask = forward_process(ids, MASK, 0.5, generator=torch.Generator().manual_seed(2))
    sum_loss, count = model(ids, labels=ids, masked_indices=masked, p_mask=p_mask)
    logits = model.logits(torch.where(masked, MASK, ids))
    nll = -logits.log_softmax(-1).gather(-1, ids[..., None])[..., 0]
    assert int(count) == int(masked.sum()) > 0
    expected = (nll[masked] / p_mask[masked]).sum()
    assert_within_budget([compare_tensor("sum_loss", sum_loss, [expected], expected)])


def test_dlm_loss_weight_scales_the_sum():
    ids = _ids(3)
    _, masked, p_mask = forward_process(ids, MASK, 0.5, generator=torch.Generator().manual_seed(4))
    plain, _ = build_tiny_model(0, torch.float64)(ids, labels=ids, masked_indices=masked, p_mask=p_mask)
    weighted, _ = build_tiny_model(0, torch.float64, dlm_loss_weight=0.25)(
        ids, labels=ids, masked_indices=masked, p_mask=p_mask
    )
    assert weighted.item() == 0.25 * plain.item()


def test_without_masks_the_forward_draws_them_from_the_generator():
    model = build_tiny_model(0)
    ids = _ids(5)
    first = model(ids, labels=ids, generator=torch.Generator().manual_seed(6))
    again = model(ids, labels=ids, generator=torch.Generator().manual_seed(6))
    assert torch.equal(first[0], again[0]) and torch.equal(first[1], again[1])


def test_seeded_weights_leave_the_global_rng_alone():
    state = torch.random.get_rng_state()
    a, b = build_tiny_model(7), build_tiny_model(7)
    assert torch.equal(torch.random.get_rng_state(), state)
    assert all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values(), strict=True))
