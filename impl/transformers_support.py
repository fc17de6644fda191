"""impl's trainers under every supported transformers release, each with that release's contract.

impl stands alone, as production code does (it imports nothing from the harness): it states its own
range, the same one the harness declares for itself (``parity.safety.releases``; a test holds the two
together), and importing ``impl.trainer`` under another release fails with one line naming both. Inside it, where the Trainer divides a microbatch's loss by the
accumulation steps changed twice (docs/trainer.md, Gradient accumulation by release), and
:func:`follow_loss_scaling` says "this loss is already scaled" in the words of the installed release.
"""

from __future__ import annotations

import transformers
from packaging.specifiers import SpecifierSet

#: The transformers releases impl's trainers are written for (docs/trainer.md, Gradient accumulation by release).
SUPPORTED_TRANSFORMERS = SpecifierSet(">=5.5,<6")

#: Whether the installed ``Trainer.training_step`` reads ``loss_is_scaled_for_ga`` (from 5.19).
READS_LOSS_IS_SCALED_FOR_GA = hasattr(transformers.Trainer, "loss_is_scaled_for_ga")


def check_transformers_version(installed: str = transformers.__version__) -> None:
    if installed not in SUPPORTED_TRANSFORMERS:
        raise ImportError(
            f"transformers {installed} is installed, but impl's trainers support transformers{SUPPORTED_TRANSFORMERS}: "
            f"pip install 'transformers{SUPPORTED_TRANSFORMERS}'"
        )


def follow_loss_scaling(trainer: transformers.Trainer) -> None:
    """After ``Trainer.__init__``: the trainer's ``loss_is_scaled_for_ga`` (5.19's words) as the installed
    release understands it. Before 5.19, ``training_step`` leaves the loss undivided exactly when
    ``model_accepts_loss_kwargs`` holds (and the window's count is given), so that attribute says it;
    5.5.0 to 5.5.3 build the accelerator with ``num_steps = gradient_accumulation_steps``, so its
    ``backward`` divides once more, which later releases undo with ``num_steps = 1``, as done here."""
    if not READS_LOSS_IS_SCALED_FOR_GA:
        trainer.model_accepts_loss_kwargs = bool(type(trainer).loss_is_scaled_for_ga)
    if trainer.accelerator.gradient_accumulation_steps != 1:
        trainer.accelerator.gradient_accumulation_steps = 1
