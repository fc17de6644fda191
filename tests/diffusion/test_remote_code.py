"""The oracle built from remote code agrees with the built-in one bit for bit (docs/diffusion-model.md).

The stand-in folder ``tests/assets/nemotron_standin`` (written for this repository, with the
published layout: ``config.json`` with ``auto_map``, a configuration module, a modeling module that
imports its backbone relatively, a ``ModelOutput``, the attention mask ignored in diffusion mode)
proves the loading path on every run; it is imported and probed once per session. NVIDIA's real
folder, when ``--nemotron-remote-code`` or ``$PARITY_NEMOTRON_REMOTE_CODE`` names one, goes through
the same checks.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import shutil
import socket
import sys
import textwrap
import types
from pathlib import Path

import pytest
import torch
import transformers

from oracle.nemotron_diffusion import TINY_CONFIG, build_tiny_model, forward_process
from oracle.remote_code import (
    REMOTE_CODE_ENV,
    SUPPORTED_REMOTE_TRANSFORMERS,
    RemoteCodeError,
    activate_remote_code,
    check_remote_model,
    copy_weights,
    load_remote_model,
    oracle_model_factory,
    remote_classes,
    restore_declared_cache_fields,
)

MASK_TOKEN_ID = TINY_CONFIG["mask_token_id"]
STANDIN = Path(__file__).resolve().parent.parent / "assets" / "nemotron_standin"

#: dtype x padding attention mask x dlm_loss_weight x frozen head: every combination the issue names.
AGREEMENT_CASES = [
    pytest.param(
        dtype, padding, weight, frozen,
        id=f"{str(dtype)[6:]}-{'pad' if padding else 'nopad'}-w{weight}-{'frozen' if frozen else 'head'}",
    )
    for dtype, padding, weight, frozen in itertools.product(
        (torch.float32, torch.float64), (False, True), (None, 0.25), (False, True)
    )
]


def assert_bitwise_agreement(
    folder, dtype=torch.float32, padding=False, dlm_loss_weight=None, frozen_head=False, seed=0, draws=2
) -> None:
    """Loss, mask count, logits, every parameter gradient and the last hidden states equal to the built-in
    oracle's, bit for bit, on its weights and draws."""
    overrides = {} if dlm_loss_weight is None else {"dlm_loss_weight": dlm_loss_weight}
    builtin = build_tiny_model(seed, dtype, **overrides)
    remote = load_remote_model(folder, seed, dtype, **overrides)
    copy_weights(builtin, remote)
    assert remote.config._attn_implementation == builtin.config._attn_implementation
    for model in (builtin, remote):
        model.get_output_embeddings().weight.requires_grad_(not frozen_head)
    remote_parameters = dict(remote.named_parameters())
    generator = torch.Generator().manual_seed(seed)
    for draw in range(draws):
        input_ids = torch.randint(0, MASK_TOKEN_ID, (2, 12), generator=generator)
        _, masked, p_mask = forward_process(input_ids, MASK_TOKEN_ID, generator=generator)
        attention_mask = None
        if padding:
            attention_mask = torch.ones_like(input_ids)
            attention_mask[0, 7:] = 0
        assert masked.any(), f"draw {draw} masks nothing and would prove nothing"
        results = []
        for model in (builtin, remote):
            model.zero_grad(set_to_none=True)
            output = model(
                input_ids=input_ids,
                attention_mask=attention_mask,
                labels=input_ids,
                masked_indices=masked.clone(),
                p_mask=p_mask,
            )
            loss, count = output.loss
            loss.backward()
            results.append((loss.detach(), count, output.logits.detach()))
        (builtin_loss, builtin_count, builtin_logits), (remote_loss, remote_count, remote_logits) = results
        assert torch.equal(remote_count, builtin_count), f"draw {draw}: {remote_count} vs {builtin_count} masked"
        assert torch.equal(remote_loss, builtin_loss), f"draw {draw}: loss {remote_loss} vs {builtin_loss}"
        assert torch.equal(remote_logits, builtin_logits), f"draw {draw}: logits differ"
        for name, parameter in builtin.named_parameters():
            theirs = remote_parameters[name].grad
            if parameter.grad is None:
                assert theirs is None, f"draw {draw}: {name} has a gradient only in the remote model"
            else:
                assert torch.equal(theirs, parameter.grad), f"draw {draw}: gradient of {name}"
    with torch.no_grad():  # the published way to the hidden states, for a caller that applies the head itself
        builtin_hidden, remote_hidden = (m(input_ids=input_ids, output_last_hidden_states_only=True) for m in (builtin, remote))
    assert set(remote_hidden.keys()) == {"last_hidden_state"}
    assert torch.equal(remote_hidden.last_hidden_state, builtin_hidden.last_hidden_state)


@pytest.mark.parametrize(("dtype", "padding", "dlm_loss_weight", "frozen_head"), AGREEMENT_CASES)
def test_standin_matches_builtin(dtype, padding, dlm_loss_weight, frozen_head):
    assert_bitwise_agreement(STANDIN, dtype, padding, dlm_loss_weight, frozen_head)


@pytest.mark.parametrize(("dtype", "padding", "dlm_loss_weight", "frozen_head"), AGREEMENT_CASES)
def test_nvidia_remote_code_matches_builtin(remote_code_folder, dtype, padding, dlm_loss_weight, frozen_head):
    if remote_code_folder is None:
        pytest.skip(f"no NVIDIA remote-code folder: pass --nemotron-remote-code PATH or set {REMOTE_CODE_ENV}")
    assert_bitwise_agreement(remote_code_folder, dtype, padding, dlm_loss_weight, frozen_head)


def test_standin_loads_through_remote_code_as_published():
    model = load_remote_model(STANDIN)
    assert type(model).__module__.startswith("transformers_modules.")
    assert type(model).__name__ == "NemotronStandinModel"
    assert model.config.hidden_size == TINY_CONFIG["hidden_size"]
    assert "is_causal" not in model.config.to_dict(), "no config field the published config lacks is injected"
    assert model.get_output_embeddings() is model.diffusion_head


def _trainer_calls():
    """Each way a trainer of this repository calls the model: impl's two trainers (the published keywords;
    the logits), the model drawing its own noise, and a fused head on the published hidden states."""
    from impl.logits_trainer import LogitsDiffusionTrainer
    from impl.trainer import WindowedDiffusionTrainer
    from tests.training.interleavings import ModelDrawsTrainer
    from tests.training.variants import FusedHeadTrainer

    trainers = [WindowedDiffusionTrainer, LogitsDiffusionTrainer, ModelDrawsTrainer, FusedHeadTrainer]
    return [pytest.param(trainer_class, id=trainer_class.__name__) for trainer_class in trainers]


@pytest.mark.parametrize("trainer_class", _trainer_calls())
def test_every_trainer_call_holds_on_the_published_surface_alone(trainer_class, tmp_path, monkeypatch):
    """The stand-in has the published surface and nothing of the built-in model's own (``base_model`` is
    the whole model, the output has no hidden states), so a trainer or variant leaning on a built-in-only
    attribute crashes here, in the default run, not only with NVIDIA's files."""
    from parity.cases import TrainerCase
    from parity.compare import assert_verdict
    from parity.training.diffusion.drivers.trainer_run import run_trainer
    from parity.training.diffusion.verdict import trainer_verdict

    monkeypatch.setenv(REMOTE_CODE_ENV, str(STANDIN))
    case = TrainerCase(examples_per_rank=4, eval_batch_size=3)
    assert_verdict(trainer_verdict(case, [run_trainer(trainer_class, case, str(tmp_path))]))


def test_classes_are_loaded_once_per_folder():
    load_remote_model(STANDIN)
    imports, probes = remote_classes.cache_info().misses, check_remote_model.cache_info().misses
    first, second = load_remote_model(STANDIN, 1), load_remote_model(STANDIN, 2, torch.float64)
    assert type(first) is type(second)
    assert remote_classes.cache_info().misses == imports and check_remote_model.cache_info().misses == probes


def test_factory_gives_the_remote_model_the_builtin_weights(monkeypatch):
    monkeypatch.setenv(REMOTE_CODE_ENV, str(STANDIN))
    model = oracle_model_factory()(seed=3)
    assert type(model).__name__ == "NemotronStandinModel"
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


def _standin_copy(tmp_path: Path, edit=None, config=None) -> Path:
    """A copy of the stand-in with one file edited; each copy is its own module, so names never collide."""
    folder = tmp_path / "standin_copy"
    shutil.copytree(STANDIN, folder, ignore=shutil.ignore_patterns("__pycache__"))
    if edit:
        name, old, new = edit
        text = (folder / name).read_text()
        assert old in text, f"{old!r} not in {name}"
        (folder / name).write_text(text.replace(old, new))
    if config:
        raw = json.loads((folder / "config.json").read_text())
        (folder / "config.json").write_text(json.dumps({**raw, **config}))
    return folder


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def _without(folder: Path, name: str) -> Path:
    (folder / name).unlink()
    return folder


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
        lambda tmp: _config_only(tmp, json.loads((STANDIN / "config.json").read_text())),
        "configuration_nemotron_standin.py does not exist",
    ),
    "backbone missing": (
        lambda tmp: _without(_standin_copy(tmp), "modeling_standin_backbone.py"),
        r"modeling_nemotron_standin.py imports .modeling_standin_backbone but .*modeling_standin_backbone.py does not exist",
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


def test_code_this_transformers_cannot_run_is_one_clear_error(tmp_path):
    """What transformers 5.24 does to the published forward, imitated: a TypeError deep in the output class."""
    folder = _standin_copy(
        tmp_path,
        edit=("modeling_nemotron_standin.py", "NemotronStandinOutputWithPast(loss=loss, logits=logits, past_key_values=None)",
              "NemotronStandinOutputWithPast(loss=loss, logits=logits, cache=None)"),
    )
    with pytest.raises(RemoteCodeError) as raised:
        load_remote_model(folder)
    message = str(raised.value)
    assert "\n" not in message
    assert f"transformers {transformers.__version__} cannot run this folder's remote code" in message
    assert "unexpected keyword argument 'cache'" in message
    assert f"install transformers{SUPPORTED_REMOTE_TRANSFORMERS} or use `tox -e nvidia -- " in message


def _renames_past_key_values() -> bool:
    """Whether the installed ModelOutput hands ``past_key_values=`` to ``__init__`` as ``cache=`` (5.24 does)."""

    @dataclasses.dataclass
    class Probe(transformers.utils.ModelOutput):
        logits: torch.Tensor | None = None
        past_key_values: tuple | None = None

    try:
        Probe(past_key_values=None)
    except TypeError:
        return True
    return False


def test_the_cache_rename_is_shimmed_at_the_loader_only_where_the_release_needs_it(tmp_path, monkeypatch):
    """The stand-in's output class declares past_key_values and is handed it, as NVIDIA's is: it runs under the
    installed release, and the provenance says whether (and what) the loader's shim changed for it."""
    monkeypatch.setenv(REMOTE_CODE_ENV, "")  # recorded, so the folder activate_remote_code names there is undone
    source = activate_remote_code(_standin_copy(tmp_path))
    shims = [line.strip() for line in source.describe() if line.strip().startswith("shim:")]
    if _renames_past_key_values():
        assert shims == list(source.shims) and len(shims) == 1
        assert f"transformers {transformers.__version__} renames past_key_values to cache" in shims[0]
        assert "NemotronStandinOutputWithPast declares past_key_values" in shims[0]
    else:
        assert shims == [] and source.shims == ()


def test_the_shim_is_what_mends_an_output_class_that_declares_past_key_values(monkeypatch):
    if not _renames_past_key_values():
        pytest.skip(f"transformers {transformers.__version__} does not rename past_key_values: nothing to mend")
    module = types.ModuleType("declares_past_key_values")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    exec(textwrap.dedent("""
        import dataclasses, torch, transformers
        @dataclasses.dataclass
        class Output(transformers.utils.ModelOutput):
            logits: torch.Tensor | None = None
            past_key_values: tuple | None = None
        class Model:
            pass
    """), module.__dict__)  # noqa: S102 (a fixed class, as remote code declares it)
    with pytest.raises(TypeError, match="unexpected keyword argument 'cache'"):
        module.Output(logits=torch.ones(1), past_key_values=None)
    (line,) = restore_declared_cache_fields(module.Model)
    assert "Output declares past_key_values" in line
    assert torch.equal(module.Output(logits=torch.ones(1), past_key_values=None).logits, torch.ones(1))
    assert restore_declared_cache_fields(module.Model) == ()  # applied once: nothing left to restore


def test_a_causal_model_is_refused_by_behaviour(tmp_path):
    folder = _standin_copy(tmp_path, config={"dlm_paradigm": "autoregressive"})
    with pytest.raises(ValueError, match="is not bidirectional: changing the last token"):
        load_remote_model(folder)


BARE_CONFIGURATION = '''
from transformers import PreTrainedConfig


class NemotronStandinConfig(PreTrainedConfig):
    model_type = "nemotron_standin"
'''


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (("configuration_nemotron_standin.py", None, BARE_CONFIGURATION), r"has no field\(s\)"),
        (
            ("configuration_nemotron_standin.py", "    dp_varying_mask_ratio: bool = False\n",
             "    dp_varying_mask_ratio: bool = False\n\n    def __post_init__(self, **kwargs):\n"
             "        super().__post_init__(**kwargs)\n        self.mask_token_id = 100\n"),
            "did not keep the tiny value of",
        ),
    ],
    ids=["nested or renamed fields", "config overrides the tiny values"],
)
def test_config_that_cannot_take_the_tiny_values_is_refused(edit, message, tmp_path):
    name, old, new = edit
    folder = _standin_copy(tmp_path)
    if old is None:
        (folder / name).write_text(new)
    else:
        folder = _standin_copy(tmp_path / "edited", edit=edit)
    with pytest.raises(ValueError, match=message):
        load_remote_model(folder)


def test_the_report_refuses_code_this_transformers_cannot_run_in_one_line(tmp_path, capsys, monkeypatch):
    from parity.__main__ import main

    monkeypatch.setenv(REMOTE_CODE_ENV, "")  # recorded, so the folder activate_remote_code names there is undone
    folder = _standin_copy(
        tmp_path,
        edit=("modeling_nemotron_standin.py", "NemotronStandinOutputWithPast(loss=loss, logits=logits, past_key_values=None)",
              "NemotronStandinOutputWithPast(loss=loss, logits=logits, cache=None)"),
    )
    assert main(["--only", "diffusion-window", "--nemotron-remote-code", str(folder)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and "cannot run this folder's remote code" in lines[0] and "Traceback" not in captured.err


def test_a_scenario_that_fails_to_run_is_a_failed_cell():
    from parity.report.scenarios import Options, run_report
    from parity.targets import Target

    broken = Target(name="broken", description="a loss that cannot be imported", expect="pass",
                    loss="parity_no_such_module:LOSS")
    (result,) = run_report([broken], Options(), ["diffusion-window"], lambda message: None)
    assert not result.as_expected
    (column,) = result.columns
    assert column.verdict == "error (UNEXPECTED)"
    assert column.figures["error"].startswith("ModuleNotFoundError: No module named 'parity_no_such_module'")
