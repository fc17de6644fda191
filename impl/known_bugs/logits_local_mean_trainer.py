"""The logits-style trainer before its fix: each microbatch divided by its own masked-token count,
and the Trainer left to divide by the accumulation steps (DDP then averages the ranks' local means).
"""

from __future__ import annotations

from impl.logits_trainer import LogitsDiffusionTrainer


class LogitsLocalMeanTrainer(LogitsDiffusionTrainer):
    loss_is_scaled_for_ga = False
    window_normalised = False
