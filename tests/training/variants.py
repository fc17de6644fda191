"""Trainers the budget is calibrated on and the observation is tested with (docs/budget.md).

Correct alternatives, which must pass in float32 and float64:

* ``ChunkedCETrainer``: the logits-style trainer with its own cross-entropy kernel, computed over
  chunks of rows with a hand-written backward (softmax minus one-hot, weighted by 1/p).
* ``ReorderedSumTrainer``: the same loss summed row by row, last row first.

A correct trainer with lower-precision arithmetic, which in a float64 run must be named a
precision finding (a note; a failure only when precision is strict):

* ``Float32LossTrainer``: casts the logits to float32 for the cross-entropy.

Trainers whose noise is not the published noising, which must be named noise findings:
``PrivateGeneratorTrainer`` (its own seeded generator), ``SwappedDrawOrderTrainer`` (uniforms before
``t``), ``WrongEpsTrainer`` (declares one eps, draws with another). And ``CrashingTrainer``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from impl.logits_trainer import LogitsDiffusionTrainer
from impl.trainer import WindowedDiffusionTrainer


class _ChunkedWeightedCE(torch.autograd.Function):
    """``sum_i CE(logits_i, target_i) * weight_i`` over rows, ``chunk`` rows at a time, own backward."""

    @staticmethod
    def forward(ctx, logits, targets, weights, chunk):
        total = logits.new_zeros(())
        for start in range(0, logits.shape[0], chunk):
            part = logits[start : start + chunk]
            log_norm = torch.logsumexp(part, dim=-1)
            picked = part.gather(1, targets[start : start + chunk, None])[:, 0]
            total = total + ((log_norm - picked) * weights[start : start + chunk]).sum()
        ctx.save_for_backward(logits, targets, weights)
        ctx.chunk = chunk
        return total

    @staticmethod
    def backward(ctx, grad_total):
        logits, targets, weights = ctx.saved_tensors
        grad = torch.empty_like(logits)
        for start in range(0, logits.shape[0], ctx.chunk):
            part = logits[start : start + ctx.chunk]
            probs = torch.softmax(part, dim=-1)
            probs[torch.arange(part.shape[0]), targets[start : start + ctx.chunk]] -= 1
            grad[start : start + ctx.chunk] = probs * weights[start : start + ctx.chunk, None]
        return grad * grad_total, None, None, None


class ChunkedCETrainer(LogitsDiffusionTrainer):
    chunk = 3

    def masked_sum(self, logits, targets, masked, p):
        weights = 1.0 / p[masked].to(logits.dtype)
        return _ChunkedWeightedCE.apply(logits[masked], targets[masked], weights, self.chunk)


class ReorderedSumTrainer(LogitsDiffusionTrainer):
    def masked_sum(self, logits, targets, masked, p):
        token = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="none").view(targets.shape)
        weighted = torch.where(masked, token / p.to(token.dtype), torch.zeros_like(token))
        total = logits.new_zeros(())
        for row in reversed(range(weighted.shape[0])):
            total = total + weighted[row].flip(0).sum()
        return total


class Float32LossTrainer(LogitsDiffusionTrainer):
    def masked_sum(self, logits, targets, masked, p):
        token = F.cross_entropy(logits[masked].float(), targets[masked], reduction="none")
        return (token / p[masked].float()).sum().to(logits.dtype)


class PrivateGeneratorTrainer(LogitsDiffusionTrainer):
    """Noise from a generator of its own (seeded from args.seed), not from the global one."""

    def _draw(self, batch):
        if not hasattr(self, "_private"):
            self._private = torch.Generator().manual_seed(self.args.seed)
        ids, targets, maskable = self._maskable(batch)
        rows, length = ids.shape
        t = torch.rand(rows, generator=self._private)
        p = ((1 - self.eps) * t + self.eps)[:, None].expand(rows, length)
        return ids, targets, (torch.rand(rows, length, generator=self._private) < p) & maskable, p


class SwappedDrawOrderTrainer(LogitsDiffusionTrainer):
    """The per-token uniforms first, then ``t``: the same distribution, not the published draws."""

    def _draw(self, batch):
        ids, targets, maskable = self._maskable(batch)
        rows, length = ids.shape
        uniforms = torch.rand(rows, length)
        t = torch.rand(rows)
        p = ((1 - self.eps) * t + self.eps)[:, None].expand(rows, length)
        return ids, targets, (uniforms < p) & maskable, p


class WrongEpsTrainer(WindowedDiffusionTrainer):
    """Declares the case's eps but noises with a much larger one (and passes that p to the model)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.eps = 0.9


class CrashingTrainer(LogitsDiffusionTrainer):
    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        raise RuntimeError("this trainer fails on purpose")


class ReseedingTrainer(LogitsDiffusionTrainer):
    """Seeds the global generator with a constant of its own: its noise ignores args.seed."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        torch.manual_seed(1234)


class FusedHeadTrainer(LogitsDiffusionTrainer):
    """A fused-head path: runs the published backbone itself (``model.encoder``, as NVIDIA's own
    generation code does; not ``base_model``, which on NVIDIA's class is the whole model) and applies
    the output embedding only to the masked positions, never calling the model's own forward (single
    process: it bypasses DDP)."""

    def forward_and_sum(self, model, noisy, targets, masked, p):
        hidden = self.model.encoder(input_ids=noisy).last_hidden_state
        head = self.model.get_output_embeddings()
        chosen = hidden[masked]
        total = chosen.sum() * 0  # nothing masked: a zero that keeps its gradient path
        for start in range(0, chosen.shape[0], 4):
            logits = head(chosen[start : start + 4])
            ce = F.cross_entropy(logits, targets[masked][start : start + 4], reduction="none")
            total = total + (ce / p[masked][start : start + 4].to(ce.dtype)).sum()
        return None, total
