"""What every trainer target must refuse, whatever its own messages (docs/trainer.md, "Contract").

A trainer may refuse at construction or when it trains; what it may not do is train silently on
input that has no meaning. impl's exact messages are pinned in ``test_impl_trainer.py``, on impl only.
"""

from __future__ import annotations

import pytest

from oracle.nemotron_diffusion import build_tiny_model
from parity.cases import TrainerCase
from parity.training.run import declares_eps, pad_collate, training_arguments, training_examples


def _train(trainer_class, model, case, tmp_path):
    rows = training_examples(case)
    trainer = trainer_class(
        model=model, args=training_arguments(case, str(tmp_path)), train_dataset=rows, data_collator=pad_collate
    )
    trainer.train()


def test_a_mask_token_outside_the_vocabulary_never_trains(trainer_class, tmp_path):
    model = build_tiny_model(0)
    model.config.mask_token_id = model.config.vocab_size
    with pytest.raises(Exception):  # noqa: B017 - any refusal will do; silence would not
        _train(trainer_class, model, TrainerCase(examples_per_rank=2), tmp_path)


@pytest.mark.parametrize("eps", [0.0, -0.5, 2.0])
def test_an_eps_outside_the_unit_interval_never_trains(trainer_class, eps, tmp_path):
    if not declares_eps(trainer_class):
        pytest.skip(f"{trainer_class.__name__} declares no eps: it runs at the published one only")
    case = TrainerCase(examples_per_rank=2)
    bad = type(trainer_class.__name__, (trainer_class,), {"eps": eps})
    with pytest.raises(Exception):  # noqa: B017
        _train(bad, build_tiny_model(0), case, tmp_path)
