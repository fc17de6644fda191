"""Bad input refused: the table's ``validation/*`` properties, over the declared bad input
(parity/strategies/bad_input.py; docs/dataset.md, Bad input; docs/trainer.md, Contract tests and impl tests).

Target code is called through ``parity.safety.crash.call_target``, so a refusal arrives as ``TargetCrashed``
holding the target's own exception; accepting the input is the counterexample.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from typing import Any

import torch
from hypothesis import reject

from parity.safety.crash import TargetCrashed, call_target
from parity.strategies.bad_input import (
    BAD_DOCUMENTS,
    BAD_INDICES,
    BAD_LOSS_INPUTS,
    BAD_TRAINER_INPUTS,
    VALID_CONFIG,
    VALID_DOCUMENTS,
)
from parity.table.checks.diffusion import noise
from parity.targets import Target


def _refused(raises: type[Exception], what: str, function, *args) -> None:
    """``function(*args)`` raises ``raises`` (the target's own exception; any other is the target's crash)."""
    try:
        call_target(what, function, *args)
    except TargetCrashed as crash:
        if isinstance(crash.error, raises):
            return
        raise
    raise AssertionError(f"{what}: accepted; it must raise {raises.__name__}")


def check_refuses_unusable_documents(factory, bad: str) -> None:
    """Documents that cannot serve a sample are refused with a ValueError when the dataset is built, never served."""
    documents = [document.copy() for document in BAD_DOCUMENTS[bad]]
    _refused(ValueError, f"building a dataset of {bad}", factory, documents, VALID_CONFIG)


def check_refuses_bad_indices(factory, bad: str, target: Target | None = None) -> None:
    """An index past the end raises IndexError (iteration and samplers stop there); a target that validates its
    input also refuses a negative index with IndexError and one that is not an int with TypeError."""
    declared = BAD_INDICES[bad]
    if not declared.every_target and not (target is not None and target.validates_input):
        reject()  # impl's own promise: another target may index as it likes
    dataset = call_target("building the dataset", factory, [document.copy() for document in VALID_DOCUMENTS], VALID_CONFIG)
    _refused(declared.raises, f"serving dataset[{declared.index!r}] of a dataset of 2 samples", dataset.__getitem__,
             declared.index)


def loss_call(diffusion_loss, bad: str) -> tuple[str, Callable[[], Any]]:
    """What the loss target is asked with the declared bad input ``bad``, and the call itself: a valid window of one
    microbatch of two rows of five tokens, noised with the tiny model's ids (``noise``), changed as declared."""
    declared = BAD_LOSS_INPUTS[bad]
    if declared.empty_to == "window_count":
        return "counting an empty window", lambda: diffusion_loss.window_count([])
    batch = {"input_ids": torch.zeros(2, 5, dtype=torch.long)}
    if declared.reshaped is not None:
        key, shape = declared.reshaped
        batch[key] = torch.zeros(shape, dtype=torch.long)
    window = [] if declared.empty_to == "prepare_window" else [batch]
    return f"noising a window with {bad}", lambda: noise(diffusion_loss, window, **dict(declared.keywords))


def check_loss_refuses(diffusion_loss, bad: str) -> None:
    """Bad input to a loss target is a ValueError before any draw, never a silent wrong answer."""
    what, call = loss_call(diffusion_loss, bad)
    _refused(ValueError, what, call)


def check_trainer_refuses(trainer, bad: str) -> None:
    """A trainer never trains with a mask token outside the vocabulary, nor (if it declares ``eps``) an eps outside
    ``(0, 1]``: it may refuse at construction or when it trains, with any error."""
    from oracle.nemotron_diffusion import build_tiny_model
    from parity.cases import TrainerCase
    from parity.training.diffusion.drivers.trainer_run import declares_eps, pad_collate, training_arguments, training_examples
    from parity.training.shipped import as_shipped

    setting, value = BAD_TRAINER_INPUTS[bad]
    shipped = as_shipped(trainer)
    if setting == "eps" and not declares_eps(trainer):
        reject()  # it runs at the published eps only
    model, case = build_tiny_model(0), TrainerCase(examples_per_rank=2)
    with tempfile.TemporaryDirectory(prefix="parity-refuses-") as folder:
        args, trainer_class = training_arguments(case, folder, trainer=shipped), shipped.trainer
        if setting == "mask_token_id":
            model.config.mask_token_id = value
        elif shipped.eps_argument is not None:  # set where the trainer reads it, bypassing the case's own check
            setattr(args, shipped.eps_argument, value)
        else:
            trainer_class = type(trainer_class.__name__, (trainer_class,), {"eps": value})
        tokenizer = shipped.tokenizer(model)

        def train():
            trainer_class(model=model, args=args, train_dataset=training_examples(case), processing_class=tokenizer,
                          data_collator=shipped.collator_for(tokenizer, pad_collate)).train()

        _refused(Exception, f"training with {bad}", train)
