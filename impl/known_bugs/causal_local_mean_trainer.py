"""The causal-LM trainer before its fix: each microbatch divided by its own supervised count, and the Trainer
left to divide by the accumulation steps (DDP then averages the ranks' means). This is what every
``transformers.Trainer`` computed before 4.46 (transformers #24725, fixed by #34191), kept as a known bug
(docs/causal-lm.md, Trainers and their contract per release).
"""

from __future__ import annotations

from impl.causal_trainer import WindowedCausalTrainer


class CausalLocalMeanTrainer(WindowedCausalTrainer):
    loss_is_scaled_for_ga = False
    window_normalised = False
