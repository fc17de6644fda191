"""Bugs confined to one class of case each, planted in copies of impl's trainers (docs/trainer.md; loaded
by name as ``tests.quality.corner_bugs:NAME``). Each passes every case outside its class, so only a
run that draws that class catches it:

* ``RankLocalScaledLogitsTrainer``: the logits trainer's rank-local branch (counts not gathered over the
  ranks) still multiplies by the world size, as the gathered branch must: two ranks, rank-local counts;
* ``HalfPrecisionCountLogitsTrainer`` and ``HALF_PRECISION_COUNT_LOSS``: the window's masked count kept in
  float16, as an autocast would cast it: exact up to 2048, so only a window that masks more shows it.
"""

from __future__ import annotations

from dataclasses import replace

import torch
import torch.distributed as dist

from impl.diffusion_loss import WindowedDiffusionLoss
from impl.logits_trainer import LogitsDiffusionTrainer


class RankLocalScaledLogitsTrainer(LogitsDiffusionTrainer):
    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        loss = super().compute_loss(model, inputs, return_outputs, num_items_in_batch)
        rank_local = model.training and num_items_in_batch is not None and not self._gathered()
        if rank_local and dist.is_available() and dist.is_initialized():
            scale = dist.get_world_size()
            return (loss[0] * scale, loss[1]) if return_outputs else loss * scale
        return loss


class HalfPrecisionCountLogitsTrainer(LogitsDiffusionTrainer):
    def window_count(self, device):
        return super().window_count(device).to(torch.float16)


class HalfPrecisionCountLoss(WindowedDiffusionLoss):
    """impl's windowed loss whose window count is kept in float16."""

    def window_count(self, window, **kwargs):
        count = super().window_count(window, **kwargs)
        return replace(count, num_items=count.num_items.to(torch.float16))


#: As a loss target's interface (``tests.quality.corner_bugs:HALF_PRECISION_COUNT_LOSS``).
HALF_PRECISION_COUNT_LOSS = HalfPrecisionCountLoss()
