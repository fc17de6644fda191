"""A causal-LM ``transformers.Trainer`` that computes its own loss, normalised over the accumulation window.

One optimizer step must follow ``sum CE / N``: the next-token cross-entropy summed over every supervised
position of the window, on every rank, divided once by ``N``, those positions counted *after* the shift
(docs/causal-lm.md, Trainers and their contract per release). The trainer reads ``.logits`` and computes the
sum itself, so no model's own loss, and no release's way of scaling it, stands between the rows and the rule.

It counts the window itself in ``get_batch_samples``: transformers 5.5 to 5.9 count ``labels != -100`` before
the shift (the first label of a row counted though nothing predicts it), 5.10 on after it. The count is summed
over ranks when ``average_tokens_across_devices``, and each microbatch then returns ``S_g * world / N`` (DDP
averages the ranks' gradients; the factor undoes it). ``loss_is_scaled_for_ga = True``, said in the installed
release's words by ``impl.transformers_support.follow_loss_scaling``, keeps the Trainer from dividing again.
"""

from __future__ import annotations

import itertools

import torch
import torch.distributed as dist
import torch.nn.functional as F
from transformers import Trainer

from impl.transformers_support import check_transformers_version, follow_loss_scaling

check_transformers_version()

IGNORE_INDEX = -100


def next_token_targets(labels: torch.Tensor) -> torch.Tensor:
    """The label each position predicts: ``labels[:, 1:]`` (the last position predicts nothing)."""
    return labels[:, 1:]


class WindowedCausalTrainer(Trainer):
    """Sum of next-token cross-entropy over the window's supervised positions, divided once by their count."""

    loss_is_scaled_for_ga = True
    #: Whether a microbatch is divided by the window's count (the fix) or by its own (the bug).
    window_normalised = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        follow_loss_scaling(self)

    def get_batch_samples(self, epoch_iterator, num_batches, device):
        batches = list(itertools.islice(epoch_iterator, num_batches))
        if not batches:
            return batches, None
        count = sum(next_token_targets(b["labels"]).ne(IGNORE_INDEX).sum() for b in batches).to(device)
        if self._gathered():
            count = count.clone()
            dist.all_reduce(count)
        return batches, count

    def _gathered(self) -> bool:
        return bool(self.args.average_tokens_across_devices) and dist.is_available() and dist.is_initialized()

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        outputs = model(**{key: value for key, value in inputs.items() if key != "labels"})
        logits = outputs.logits[:, :-1]
        targets = next_token_targets(inputs["labels"]).to(logits.device)
        supervised = targets != IGNORE_INDEX
        # bfloat16 logits are summed in float32; float32 and float64 in their own dtype
        chosen = logits[supervised].to(torch.promote_types(logits.dtype, torch.float32))
        total = F.cross_entropy(chosen, targets[supervised], reduction="sum")
        if num_items_in_batch is None or not self.window_normalised:  # a direct call, or the pre-fix bug
            loss = total / supervised.sum().clamp(min=1)
        else:
            world = dist.get_world_size() if self._gathered() else 1
            loss = total * world / num_items_in_batch.to(total.device).clamp(min=1)
        return (loss, outputs) if return_outputs else loss
