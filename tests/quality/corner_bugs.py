"""Bugs confined to one class of case each, planted in copies of impl's trainers and dataset (docs/trainer.md; loaded
by name as ``tests.quality.corner_bugs:NAME``). Each passes every case outside its class, so only a
run that draws that class catches it:

* ``RankLocalScaledLogitsTrainer``: the logits trainer's rank-local branch (counts not gathered over the
  ranks) still multiplies by the world size, as the gathered branch must: two ranks, rank-local counts;
* ``PerMicrobatchEosLogitsTrainer``: the EOS rule applied per microbatch, not per row: a microbatch that
  mixes rows with and without an answer, padded and not;
* ``HalfPrecisionCountLogitsTrainer`` and ``HALF_PRECISION_COUNT_LOSS``: the window's masked count kept in
  float16, as an autocast would cast it: exact up to 2048, so only a window that masks more shows it;
* ``UnsummedCountCausalTrainer``: impl's causal-LM trainer counting each rank's window alone, never summed over the
  ranks, while its world factor stays: two ranks that both supervise, in unequal numbers (with one rank empty the
  factor and the missing count cancel);
* ``stream_end_dataset``: impl's dataset calling a sample that ends one token short of the stream's end
  complete: only that end, with the extra token and an out-of-vocabulary pad, shows it.
"""

from __future__ import annotations

import itertools
from dataclasses import replace

import torch
import torch.distributed as dist

from impl.causal_trainer import WindowedCausalTrainer, next_token_targets
from impl.diffusion_loss import WindowedDiffusionLoss
from impl.gpt_dataset import GPTDataset
from impl.logits_trainer import IGNORE_INDEX, LogitsDiffusionTrainer


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


class PerMicrobatchEosLogitsTrainer(LogitsDiffusionTrainer):
    """The EOS rule applied per microbatch instead of per row: a row with nothing to supervise gets EOS
    targets on its padding whenever another row of its microbatch has an answer."""

    def _maskable(self, batch):
        ids, labels, attention = batch["input_ids"], batch.get("labels"), batch.get("attention_mask")
        eos = self.model.config.eos_token_id
        attended = torch.ones_like(ids, dtype=torch.bool) if attention is None else attention.bool()
        targets = ids if labels is None else labels
        maskable = attended if labels is None else attended & (labels != IGNORE_INDEX)
        if attention is not None and eos is not None:
            pad = ~attended
            ids = ids.masked_fill(pad, eos)
            if labels is not None:
                pad_targets = pad & maskable.any()  # the whole microbatch, not each row
                targets = targets.masked_fill(pad_targets, eos)
                maskable = maskable | pad_targets
        return ids, targets, maskable


class StreamEndGPTDataset(GPTDataset):
    """impl's dataset that calls a sample one token short of the stream's end complete: with an
    out-of-vocabulary pad and the extra token, that sample's missing last label is never masked."""

    def _sample_text(self, sample_id):
        text, _ = super()._sample_text(sample_id)
        start = sample_id * self._length
        return text, min(start + self._length + self._extra, self._total_tokens) - start >= len(text) - 1


def stream_end_dataset(documents, config):
    """As a dataset target's factory (``tests.quality.corner_bugs:stream_end_dataset``)."""
    from parity.dataset.impl import impl_config

    return StreamEndGPTDataset(documents, impl_config(config))


class UnsummedCountCausalTrainer(WindowedCausalTrainer):
    """impl's causal-LM trainer whose window count is never summed over the ranks; each microbatch still returns
    ``S_g * world / N``, the world factor applied without the gathered count."""

    def get_batch_samples(self, epoch_iterator, num_batches, device):
        batches = list(itertools.islice(epoch_iterator, num_batches))
        if not batches:
            return batches, None
        return batches, sum(next_token_targets(b["labels"]).ne(-100).sum() for b in batches).to(device)
