"""impl's own trainer: its messages and its support window (pinned on impl only, not on every target)."""

from __future__ import annotations

import pytest

from impl.trainer import WindowedDiffusionTrainer
from impl.transformers_support import SUPPORTED_TRANSFORMERS, check_transformers_version
from oracle.nemotron_diffusion import build_tiny_model
from parity.cases import TrainerCase
from parity.safety.releases import supported
from parity.strategies.bad_input import BAD_TRAINER_INPUTS
from parity.training.diffusion.drivers.trainer_run import training_arguments

#: impl's words for each setting of the declared bad input (parity/strategies/bad_input.py); the table's
#: ``validation/trainer-settings`` holds every trainer target to a refusal.
MESSAGES = {"mask_token_id": r"mask_token_id must lie in \[0, 97\)", "eps": r"eps must lie in \(0, 1\]"}


@pytest.mark.parametrize("bad", list(BAD_TRAINER_INPUTS))
def test_bad_settings_are_refused_with_impls_message(bad, tmp_path):
    setting, value = BAD_TRAINER_INPUTS[bad]
    model, keywords = build_tiny_model(0), {}
    if setting == "mask_token_id":
        model.config.mask_token_id = value
    else:
        keywords["eps"] = value
    with pytest.raises(ValueError, match=MESSAGES[setting]):
        WindowedDiffusionTrainer(model=model, args=training_arguments(TrainerCase(), str(tmp_path)), **keywords)


def test_unsupported_transformers_is_refused_at_import():
    check_transformers_version()  # the installed release is supported
    with pytest.raises(ImportError, match=rf"transformers 4\.46\.0 is installed.*{supported('transformers').specifier}"):
        check_transformers_version("4.46.0")


def test_impl_states_the_range_the_harness_declares():
    assert SUPPORTED_TRANSFORMERS == supported("transformers").specifier
