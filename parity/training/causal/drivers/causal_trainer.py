"""A causal-LM target run on a causal-LM case, whichever it is (``parity.targets.Target.causal_trainer`` or ``loop``):
a ``transformers.Trainer`` subclass through :mod:`parity.training.causal.drivers.hf_trainer`, one of TRL's
``SFTTrainer`` modes through :mod:`parity.training.causal.drivers.trl_sft`, a loop of the user's through
:mod:`parity.training.causal.drivers.loop`. The one driver name a launch on several ranks needs
(:func:`parity.training.causal.drivers.ranks.run_on_ranks`), so trainers and loops share one launch."""

from __future__ import annotations

from parity.training.causal.drivers.hf_trainer import run_hf_trainer
from parity.training.causal.drivers.loop import is_loop, run_loop
from parity.training.causal.drivers.trl_sft import SftMode, run_sft
from parity.training.causal.record import CausalCase, CausalRecord


def run_causal_trainer(trainer, case: CausalCase, rank: int = 0, world_size: int = 1) -> CausalRecord:
    """``trainer`` (a ``Trainer`` subclass, an :class:`SftMode` or a loop) trained on ``case`` as rank ``rank`` of
    ``world_size`` (a loop reads its rank from the process group it prepares its model for)."""
    if is_loop(trainer):
        return run_loop(trainer, case)
    if isinstance(trainer, SftMode):
        return run_sft(trainer, case, rank, world_size)
    return run_hf_trainer(trainer, case, rank, world_size)
