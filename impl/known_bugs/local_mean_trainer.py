"""The pre-fix trainer: local means per microbatch, and the Trainer divides by the accumulation steps."""

from __future__ import annotations

from impl.known_bugs.local_mean import LOCAL_MEAN_LOSS
from impl.trainer import WindowedDiffusionTrainer


class LocalMeanTrainer(WindowedDiffusionTrainer):
    loss_is_scaled_for_ga = False
    diffusion_loss = LOCAL_MEAN_LOSS
