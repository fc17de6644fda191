"""Correct trainers that draw the published noise at other points of the run (docs/trainer.md, Where a trainer may draw).

Each draws every row's ``t``, then one uniform per token, from the global generator, and
normalises by the window's realized count; only *when* the draws happen differs. The harness
must pass every one of them, alone and on two ranks. The logits trainer itself
(``impl.logits_trainer``) is the first interleaving: the whole window drawn in
``get_batch_samples`` once all its batches are fetched.
"""

from __future__ import annotations

import itertools
from collections import deque

import torch
import torch.distributed as dist

from impl.logits_trainer import LogitsDiffusionTrainer


class FetchThenDrawTrainer(LogitsDiffusionTrainer):
    """Fetches one batch, draws its noise, fetches the next (the DataLoader collating a batch ahead
    in between), as Unsloth's fixed ``DiffusionTrainer`` does."""

    def fetch_and_draw(self, epoch_iterator, num_batches):
        batches, noise = [], deque()
        for batch in itertools.islice(epoch_iterator, num_batches):
            batches.append(batch)
            noise.append(self._draw(batch))
        return batches, noise


class ComputeLossDrawsTrainer(LogitsDiffusionTrainer):
    """Fetches the window without drawing; the window's first ``compute_loss`` draws all of it and
    counts it, before its first forward."""

    def fetch_and_draw(self, epoch_iterator, num_batches):
        self._undrawn = list(itertools.islice(epoch_iterator, num_batches))
        return self._undrawn, deque()

    def window_count(self, device):
        return torch.zeros((), device=device)  # a stand-in: the count is taken when the window is drawn

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        if model.training and getattr(self, "_undrawn", None):
            self._window_noise = deque(self._draw(batch) for batch in self._undrawn)
            self._undrawn, self._count = [], super().window_count(inputs["input_ids"].device)
        if model.training and num_items_in_batch is not None:
            num_items_in_batch = self._count
        return super().compute_loss(model, inputs, return_outputs, num_items_in_batch)


class PredictionStepDrawsTrainer(LogitsDiffusionTrainer):
    """Draws each evaluation batch's noise in ``prediction_step``, before the loss is computed."""

    _drawn = None

    def prediction_step(self, model, inputs, prediction_loss_only, ignore_keys=None):
        self._drawn = LogitsDiffusionTrainer._draw(self, inputs)
        return super().prediction_step(model, inputs, prediction_loss_only, ignore_keys)

    def _draw(self, batch):
        drawn, self._drawn = self._drawn, None
        return drawn if drawn is not None else super()._draw(batch)


class ModelDrawsTrainer(LogitsDiffusionTrainer):
    """Leaves the noising to the published model's forward (labels and a loss mask, no masks) and
    reads ``.loss``. The window's count is known only after its last forward, so the backward of
    ``sum S_g / N`` waits for it (DDP syncs on that microbatch)."""

    model_contract = "loss-pair"

    def get_batch_samples(self, epoch_iterator, num_batches, device):
        batches = list(itertools.islice(epoch_iterator, num_batches))
        self._window_left, self._window = len(batches), []
        return batches, None

    def _sum_and_count(self, model, inputs):
        ids, targets, maskable = self._maskable(inputs)
        return model(input_ids=ids, labels=targets, loss_mask=maskable.long(), eps=self.eps).loss

    def training_step(self, model, inputs, num_items_in_batch=None):
        model.train()
        self._window.append(self._sum_and_count(model, self._prepare_inputs(inputs)))
        self._window_left -= 1
        if self._window_left:
            return torch.zeros((), device=self.args.device)
        count = sum(c for _, c in self._window)
        scale = 1
        if self._gathered():
            count, scale = count.clone(), dist.get_world_size()
            dist.all_reduce(count)
        loss = sum(s for s, _ in self._window) * scale / count.clamp(min=1)
        self.accelerator.backward(loss)
        return loss.detach()

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        """Evaluation: this batch alone, its own count."""
        sum_loss, count = self._sum_and_count(model, inputs)
        loss = sum_loss / count.clamp(min=1)
        return (loss, {"loss": loss}) if return_outputs else loss


#: Every interleaving, by the name the tests give it.
INTERLEAVINGS = {
    "whole-window": LogitsDiffusionTrainer,
    "fetch-then-draw": FetchThenDrawTrainer,
    "compute-loss": ComputeLossDrawsTrainer,
    "model-forward": ModelDrawsTrainer,
    "prediction-step": PredictionStepDrawsTrainer,
}
