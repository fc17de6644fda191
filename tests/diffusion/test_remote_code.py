"""The oracle built from NVIDIA's remote code on disk agrees with the built-in one bit for bit (SPEC §5.1).

A stand-in folder written here proves the loading path on every run; NVIDIA's real folder, when
``--nemotron-remote-code`` or ``$PARITY_NEMOTRON_REMOTE_CODE`` names one, goes through the same check.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
import torch
from torch import nn

from oracle.nemotron_diffusion import TINY_CONFIG, build_tiny_model, forward_process
from oracle.remote_code import REMOTE_CODE_ENV, copy_weights, load_remote_model, oracle_model_factory

MASK_TOKEN_ID = TINY_CONFIG["mask_token_id"]

# The stand-in follows the published contract (an encoder ``Ministral3Model`` with an untied
# ``diffusion_head``, ``(sum_loss, num_mask_tokens)`` with 1/p weighting) and is written here as text,
# independently of the built-in oracle, which it never imports.
STANDIN_CONFIGURATION = '''
from huggingface_hub.dataclasses import strict
from transformers import Ministral3Config


@strict
class StandinConfig(Ministral3Config):
    model_type = "standin_diffusion"
    mask_token_id: int = 100
    dlm_paradigm: str = "bidirectional"
    dlm_loss_weight: float | None = None

    def __post_init__(self, **kwargs):
        self.is_causal = self.dlm_paradigm != "bidirectional"
        super().__post_init__(**kwargs)
'''

STANDIN_MODELING = '''
from dataclasses import dataclass

import torch.nn.functional as F
from torch import nn
from transformers import Ministral3Model, PreTrainedModel
from transformers.utils import ModelOutput

from .configuration_standin import StandinConfig


@dataclass
class StandinOutput(ModelOutput):
    loss: tuple | None = None
    logits: object = None


class StandinModel(PreTrainedModel):
    config_class = StandinConfig
    base_model_prefix = "encoder"
    _supports_sdpa = True

    def __init__(self, config):
        super().__init__(config)
        self.encoder = Ministral3Model(config)
        self.diffusion_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.post_init()

    def forward(self, input_ids, labels, masked_indices, p_mask, attention_mask=None):
        noisy = input_ids.masked_fill(masked_indices, self.config.mask_token_id)
        hidden = self.encoder(input_ids=noisy, attention_mask=attention_mask).last_hidden_state
        logits = self.diffusion_head(hidden)
        token_loss = F.cross_entropy(logits[masked_indices], labels[masked_indices], reduction="none")
        loss = (token_loss / p_mask[masked_indices]).sum()
        if self.config.dlm_loss_weight is not None:
            loss = loss * self.config.dlm_loss_weight
        return StandinOutput(loss=(loss, masked_indices.sum()), logits=logits)
'''

STANDIN_CONFIG_JSON = {
    "architectures": ["StandinModel"],
    "auto_map": {
        "AutoConfig": "configuration_standin.StandinConfig",
        "AutoModel": "modeling_standin.StandinModel",
    },
    "model_type": "standin_diffusion",
    # Published-size values, so the tiny config demonstrably replaces them.
    "hidden_size": 4096,
    "num_hidden_layers": 34,
    "vocab_size": 131072,
    "mask_token_id": 100,
    "eos_token_id": 11,
    "dlm_paradigm": "bidirectional",
    "dtype": "bfloat16",
}


def write_standin_folder(folder: Path, configuration: str = STANDIN_CONFIGURATION) -> Path:
    """A snapshot-shaped folder of remote code; each test writes its own, so module names never collide."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(STANDIN_CONFIG_JSON, indent=2))
    (folder / "configuration_standin.py").write_text(configuration)
    (folder / "modeling_standin.py").write_text(STANDIN_MODELING)
    return folder


def assert_bitwise_agreement(remote: nn.Module, seed: int = 0, draws: int = 3) -> None:
    """Loss, mask count and every parameter gradient equal to the built-in oracle's, on its weights and draws."""
    builtin = build_tiny_model(seed)
    copy_weights(builtin, remote)
    assert remote.config._attn_implementation == builtin.config._attn_implementation
    remote_parameters = dict(remote.named_parameters())
    generator = torch.Generator().manual_seed(seed)
    for draw in range(draws):
        input_ids = torch.randint(0, MASK_TOKEN_ID, (2, 12), generator=generator)
        _, masked, p_mask = forward_process(input_ids, MASK_TOKEN_ID, generator=generator)
        assert masked.any(), f"draw {draw} masks nothing and would prove nothing"
        results = []
        for model in (builtin, remote):
            model.zero_grad(set_to_none=True)
            loss, count = model(input_ids=input_ids, labels=input_ids, masked_indices=masked, p_mask=p_mask).loss
            loss.backward()
            results.append((loss.detach(), count))
        (builtin_loss, builtin_count), (remote_loss, remote_count) = results
        assert torch.equal(remote_count, builtin_count), f"draw {draw}: {remote_count} vs {builtin_count} masked"
        assert torch.equal(remote_loss, builtin_loss), f"draw {draw}: loss {remote_loss} vs {builtin_loss}"
        for name, parameter in builtin.named_parameters():
            assert torch.equal(remote_parameters[name].grad, parameter.grad), f"draw {draw}: gradient of {name}"


def test_standin_loads_through_remote_code_and_matches_builtin(tmp_path):
    model = load_remote_model(write_standin_folder(tmp_path))
    assert type(model).__module__.startswith("transformers_modules.")
    assert type(model).__name__ == "StandinModel"
    assert model.config.hidden_size == TINY_CONFIG["hidden_size"]
    assert model.config.is_causal is False
    assert_bitwise_agreement(model)


def test_nvidia_remote_code_matches_builtin(remote_code_folder):
    if remote_code_folder is None:
        pytest.skip(f"no NVIDIA remote-code folder: pass --nemotron-remote-code PATH or set {REMOTE_CODE_ENV}")
    assert_bitwise_agreement(load_remote_model(remote_code_folder))


def test_factory_gives_the_remote_model_the_builtin_weights(tmp_path, monkeypatch):
    monkeypatch.setenv(REMOTE_CODE_ENV, str(write_standin_folder(tmp_path)))
    model = oracle_model_factory()(seed=3)
    assert type(model).__name__ == "StandinModel"
    expected = build_tiny_model(3).state_dict()
    assert all(torch.equal(tensor, expected[name]) for name, tensor in model.state_dict().items())
    monkeypatch.delenv(REMOTE_CODE_ENV)
    assert oracle_model_factory() is build_tiny_model


def test_copy_weights_lists_every_unmatched_entry():
    source, target = build_tiny_model(0), build_tiny_model(0, torch.bfloat16, num_hidden_layers=1)
    with pytest.raises(ValueError) as raised:
        copy_weights(source, target)
    message = str(raised.value)
    assert "encoder.layers.1.self_attn.q_proj.weight: only in source" in message
    assert "diffusion_head.weight: (97, 32) torch.float32 in source, (97, 32) torch.bfloat16 in target" in message


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def _config_only(folder: Path, config: dict) -> Path:
    _write(folder / "config.json", json.dumps(config))
    return folder


BAD_FOLDERS = {
    "missing": (lambda tmp: tmp / "absent", "does not exist"),
    "hub id": (lambda tmp: "nvidia/Nemotron-Labs-Diffusion-8B", "does not exist"),
    "a file": (lambda tmp: _write(tmp / "config.json", "{}"), "is not a folder"),
    "no config.json": (lambda tmp: tmp, "has no config.json"),
    "bad json": (lambda tmp: _write(tmp / "config.json", "{").parent, "is not valid JSON"),
    "no auto_map": (lambda tmp: _config_only(tmp, {"model_type": "x"}), "auto_map.AutoConfig is None"),
    "another repo": (
        lambda tmp: _config_only(tmp, {"auto_map": {"AutoConfig": "nvidia/X--configuration_x.XConfig"}}),
        "points at another Hub repository",
    ),
    "code missing": (
        lambda tmp: _config_only(tmp, STANDIN_CONFIG_JSON),
        "configuration_standin.py does not exist",
    ),
}


@pytest.mark.parametrize("case", BAD_FOLDERS)
def test_only_an_explicit_local_folder_is_accepted(case, tmp_path, monkeypatch):
    def no_network(*args, **kwargs):
        raise AssertionError("network access attempted")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.chdir(tmp_path)  # a relative Hub id must not find a folder by accident
    make_folder, message = BAD_FOLDERS[case]
    with pytest.raises(ValueError, match=message):
        load_remote_model(make_folder(tmp_path))


BARE_CONFIGURATION = '''
from transformers import PreTrainedConfig


class StandinConfig(PreTrainedConfig):
    model_type = "standin_diffusion"
'''

STUBBORN_CONFIGURATION = STANDIN_CONFIGURATION.replace(
    "super().__post_init__(**kwargs)", "super().__post_init__(**kwargs)\n        self.mask_token_id = 100"
)


@pytest.mark.parametrize(
    ("configuration", "message"),
    [(BARE_CONFIGURATION, r"has no field\(s\)"), (STUBBORN_CONFIGURATION, "did not keep the tiny value of")],
    ids=["nested or renamed fields", "config overrides the tiny values"],
)
def test_config_that_cannot_take_the_tiny_values_is_refused(configuration, message, tmp_path):
    with pytest.raises(ValueError, match=message):
        load_remote_model(write_standin_folder(tmp_path, configuration))
