"""Bad input to a loss target is refused at the boundary.

The contract, for every loss target: a ``ValueError`` before any draw, never a silent wrong answer; the bad input is
declared once (parity/strategies/bad_input.py) and held by the table's ``validation/loss-arguments``, in the suite
and in the report's ``validation`` scenario. impl's own promise, pinned here on impl only: the message names the
field and the allowed values.
"""

from __future__ import annotations

import pytest
import torch

from parity.strategies.bad_input import BAD_LOSS_INPUTS
from parity.table.checks.diffusion import noise
from parity.table.checks.validation import loss_call

IDS = torch.zeros(2, 5, dtype=torch.long)

#: impl's words for each declared bad input.
MESSAGES = {
    "mask_token_id -1": r"mask_token_id must lie in \[0, 97\)",
    "mask_token_id equal to vocab_size": r"mask_token_id must lie in \[0, 97\)",
    "mask_token_id past vocab_size": r"mask_token_id must lie in \[0, 97\)",
    "eps 0": r"eps must lie in \(0, 1\]",
    "eps negative": r"eps must lie in \(0, 1\]",
    "eps above 1": r"eps must lie in \(0, 1\]",
    "eps nan": r"eps must lie in \(0, 1\]",
    "labels of another shape": r"window\[0\]\['labels'\] has shape \(2, 4\).*input_ids has shape \(2, 5\)",
    "attention_mask of another shape":
        r"window\[0\]\['attention_mask'\] has shape \(2, 4\).*input_ids has shape \(2, 5\)",
    "input_ids not a matrix": r"window\[0\]\['input_ids'\] must be a 2-D tensor",
    "an empty window to prepare_window": "at least one microbatch",
    "an empty window to window_count": "at least one microbatch",
}


@pytest.mark.parametrize("bad", list(BAD_LOSS_INPUTS))
def test_impl_names_what_is_wrong(target, diffusion_loss, bad):
    if target.name != "impl":
        pytest.skip(f"pins impl's own messages; {target.name} keeps the contract (validation/loss-arguments)")
    _, call = loss_call(diffusion_loss, bad)
    with pytest.raises(ValueError, match=MESSAGES[bad]):
        call()


def test_nothing_supervised_is_not_an_error(diffusion_loss):
    """A batch with no supervised token is valid input: it yields the finite zero."""
    (noised,) = noise(diffusion_loss, [{"input_ids": IDS, "labels": torch.full_like(IDS, -100)}])
    assert not noised["masked_indices"].any()
    assert int(diffusion_loss.window_count([noised]).num_items) == 0
