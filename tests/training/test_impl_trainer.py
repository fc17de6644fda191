"""impl's own trainer: its messages and its support window (pinned on impl only, not on every target)."""

from __future__ import annotations

import pytest

from impl.trainer import WindowedDiffusionTrainer
from impl.transformers_support import SUPPORTED_TRANSFORMERS, check_transformers_version
from oracle.nemotron_diffusion import build_tiny_model
from parity.cases import TrainerCase
from parity.safety.releases import supported
from parity.training.run import training_arguments


def test_mask_token_outside_the_vocabulary_is_refused_with_impls_message(tmp_path):
    model = build_tiny_model(0)
    model.config.mask_token_id = model.config.vocab_size
    with pytest.raises(ValueError, match=r"mask_token_id must lie in \[0, 97\)"):
        WindowedDiffusionTrainer(model=model, args=training_arguments(TrainerCase(), str(tmp_path)))


@pytest.mark.parametrize("eps", [0.0, 2.0])
def test_eps_outside_the_unit_interval_is_refused_with_impls_message(eps, tmp_path):
    with pytest.raises(ValueError, match=r"eps must lie in \(0, 1\]"):
        WindowedDiffusionTrainer(model=build_tiny_model(0), args=training_arguments(TrainerCase(), str(tmp_path)), eps=eps)


def test_unsupported_transformers_is_refused_at_import():
    check_transformers_version()  # the installed release is supported
    with pytest.raises(ImportError, match=rf"transformers 4\.46\.0 is installed.*{supported('transformers').specifier}"):
        check_transformers_version("4.46.0")


def test_impl_states_the_range_the_harness_declares():
    assert SUPPORTED_TRANSFORMERS == supported("transformers").specifier
