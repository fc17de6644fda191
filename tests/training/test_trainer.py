"""``Trainer.train()`` end to end, held to the oracle's full-window SGD (SPEC §5.4-5.5)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from impl.transformers_support import check_transformers_version, supported_transformers
from oracle.nemotron_diffusion import build_tiny_model
from parity.compare import assert_within_budget
from parity.trainer_run import TrainerCase, run_trainer, trainer_comparisons, training_arguments
from tests.budget import fraction_of_profile


def train_and_compare(trainer_class, case: TrainerCase, tmp_path_factory):
    record = run_trainer(trainer_class, case, str(tmp_path_factory.mktemp("trainer")))
    assert_within_budget(trainer_comparisons(case, [record]))
    return record


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_three_sgd_steps_over_windows_2_2_1(trainer_class, dtype, tmp_path_factory):
    """The pull request's run: 5 examples, micro-batch 1, accumulation 2, plain SGD, 3 steps.

    After every step the parameters, the gradients and the logged loss equal the reference's, and
    the evaluation loss equals the reference single-batch loss.
    """
    record = train_and_compare(trainer_class, TrainerCase(dtype=dtype), tmp_path_factory)
    assert [len(window) for window in record.train_draws] == [2, 2, 1]
    assert record.eval_loss is not None and record.eval_draws


trainer_cases = st.builds(
    TrainerCase,
    examples_per_rank=st.integers(1, 6),
    accumulation=st.integers(1, 3),
    max_length=st.integers(2, 10),
    data_seed=st.integers(0, 2**16),
    noise_seed=st.integers(0, 2**16),
    model_seed=st.integers(0, 3),
    dtype=st.sampled_from(["float32", "float64"]),
)


@fraction_of_profile(0.2)
@given(case=trainer_cases)
def test_any_training_run_matches_the_reference(trainer_class, case, tmp_path_factory):
    train_and_compare(trainer_class, case, tmp_path_factory)


def test_mask_token_outside_the_vocabulary_is_refused(trainer_class, tmp_path):
    model = build_tiny_model(0)
    model.config.mask_token_id = model.config.vocab_size
    with pytest.raises(ValueError, match=r"mask_token_id must lie in \[0, 97\)"):
        trainer_class(model=model, args=training_arguments(TrainerCase(), str(tmp_path)))


@pytest.mark.parametrize("eps", [0.0, 2.0])
def test_eps_outside_the_unit_interval_is_refused(trainer_class, eps, tmp_path):
    with pytest.raises(ValueError, match=r"eps must lie in \(0, 1\]"):
        trainer_class(model=build_tiny_model(0), args=training_arguments(TrainerCase(), str(tmp_path)), eps=eps)


def test_unsupported_transformers_is_refused_at_import():
    check_transformers_version()  # the installed release is supported
    with pytest.raises(ImportError, match=rf"transformers 4\.46\.0 is installed.*{supported_transformers().specifier}"):
        check_transformers_version("4.46.0")
