"""What every trainer target must refuse, whatever its own messages (docs/trainer.md, "Contract").

A trainer may refuse at construction or when it trains; what it may not do is train silently on
input that has no meaning. impl's exact messages are pinned in ``test_impl_trainer.py``, on impl only.
A target that ships its trainer with more (``parity.training.shipped``) is built with it.
"""

from __future__ import annotations

import pytest

from oracle.nemotron_diffusion import build_tiny_model
from parity.cases import TrainerCase
from parity.training.run import declares_eps, pad_collate, training_arguments, training_examples
from parity.training.shipped import as_shipped


def _train(trainer, model, case, tmp_path, eps: float | None = None):
    """Train as the target ships the trainer; ``eps`` set where the trainer reads it (its arguments'
    field, or a class attribute), bypassing the case's own check of it."""
    shipped = as_shipped(trainer)
    args, trainer_class = training_arguments(case, str(tmp_path), trainer=shipped), shipped.trainer
    if eps is not None and shipped.eps_argument is not None:
        setattr(args, shipped.eps_argument, eps)
    elif eps is not None:
        trainer_class = type(trainer_class.__name__, (trainer_class,), {"eps": eps})
    tokenizer = shipped.tokenizer(model)
    trainer_class(model=model, args=args, train_dataset=training_examples(case), processing_class=tokenizer,
                  data_collator=shipped.collator_for(tokenizer, pad_collate)).train()


def test_a_mask_token_outside_the_vocabulary_never_trains(trainer_class, tmp_path):
    model = build_tiny_model(0)
    model.config.mask_token_id = model.config.vocab_size
    with pytest.raises(Exception):  # noqa: B017 - any refusal will do; silence would not
        _train(trainer_class, model, TrainerCase(examples_per_rank=2), tmp_path)


@pytest.mark.parametrize("eps", [0.0, -0.5, 2.0])
def test_an_eps_outside_the_unit_interval_never_trains(trainer_class, eps, tmp_path):
    if not declares_eps(trainer_class):
        pytest.skip(f"{as_shipped(trainer_class).__name__} declares no eps: it runs at the published one only")
    with pytest.raises(Exception):  # noqa: B017
        _train(trainer_class, build_tiny_model(0), TrainerCase(examples_per_rank=2), tmp_path, eps=eps)
