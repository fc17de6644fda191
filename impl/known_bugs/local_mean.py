"""Pre-fix masked-diffusion normalisation: ``mean_g(S_g / N_g)`` instead of ``sum S / sum N``.

Each microbatch divides by its own masked-token count and says it is *not* scaled for gradient
accumulation, so the trainer divides by the number of microbatches and DDP averages the ranks.
"""

from __future__ import annotations

from impl.diffusion_loss import WindowedDiffusionLoss


class LocalMeanDiffusionLoss(WindowedDiffusionLoss):
    loss_is_scaled_for_ga = False

    def microbatch_loss(self, model, noised, count=None):
        return super().microbatch_loss(model, noised, count=None)


LOCAL_MEAN_LOSS = LocalMeanDiffusionLoss()

