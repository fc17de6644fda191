"""Trainers whose noise is not the published noising, each a bug seen in the wild; each must be named noise.

Beside those of ``variants.py`` (a private generator, the uniforms drawn before ``t``, a wrong eps,
a re-seeded generator): the model re-noising what the trainer already noised and counted, ``p``
without its eps floor, and one ``t`` per batch instead of per row.
"""

from __future__ import annotations

import torch

from impl.logits_trainer import LogitsDiffusionTrainer


class _LossPairForward(LogitsDiffusionTrainer):
    """Hands the model its labels, masks and ``p`` and reads ``.loss`` (the published contract)."""

    model_contract = "loss-pair"

    def forward_and_sum(self, model, noisy, targets, masked, p):
        sum_loss, _ = model(input_ids=noisy, labels=targets, masked_indices=masked, p_mask=p).loss
        return None, sum_loss


class RenoisingTrainer(_LossPairForward):
    """Noises and counts the window, then gives the model the noised ids and labels but no
    ``masked_indices``: the model draws its own masks on top, so the count and the masks differ."""

    def forward_and_sum(self, model, noisy, targets, masked, p):
        sum_loss, _ = model(input_ids=noisy, labels=targets, eps=self.eps).loss
        return None, sum_loss


class NoEpsTrainer(_LossPairForward):
    """``p = t``: the eps floor left out, in the masks and in the ``p_mask`` it passes."""

    def _draw(self, batch):
        ids, targets, maskable = self._maskable(batch)
        rows, length = ids.shape
        p = torch.rand(rows)[:, None].expand(rows, length)
        return ids, targets, (torch.rand(rows, length) < p) & maskable, p


class OneTPerBatchTrainer(LogitsDiffusionTrainer):
    """One ``t`` for the whole batch: right on batches of one row, wrong on every other."""

    def _draw(self, batch):
        ids, targets, maskable = self._maskable(batch)
        rows, length = ids.shape
        p = ((1 - self.eps) * torch.rand(1) + self.eps).expand(rows, length)
        return ids, targets, (torch.rand(rows, length) < p) & maskable, p


NOISE_BUGS = {
    "re-noised after counting": RenoisingTrainer,
    "p without eps": NoEpsTrainer,
    "one t per batch": OneTPerBatchTrainer,
}
