"""The oracle built from NVIDIA's own remote code on disk, at the tiny config (SPEC §5.1).

The built-in oracle (``oracle.nemotron_diffusion``) restates the published contract; this module loads
the published code itself, through transformers' remote-code loading, so the two can be held to each
other bit for bit on the same weights. Only an explicit local folder is accepted: a string that is not
an existing folder is refused before transformers sees it, so nothing is ever looked up on the Hub.
Imports nothing from ``impl`` or ``parity``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import torch
from torch import nn
from transformers import AutoConfig, AutoModel, PreTrainedConfig

from oracle.nemotron_diffusion import TINY_CONFIG, build_tiny_model

#: Names a local folder holding NVIDIA's ``config.json``, ``configuration_*.py`` and ``modeling_*.py``
#: (a snapshot of the Hub repository; the weights are not needed). ``--nemotron-remote-code`` in the
#: test suite names the same thing.
REMOTE_CODE_ENV = "PARITY_NEMOTRON_REMOTE_CODE"

_EXPECTED = (
    "a local folder holding NVIDIA's config.json, configuration_*.py and modeling_*.py "
    "(Hub ids are never downloaded)"
)
#: The auto classes the folder's code must provide; both are loaded from the folder.
_AUTO_CLASSES = ("AutoConfig", "AutoModel")


def check_remote_code_folder(folder: str | os.PathLike) -> Path:
    """The folder as an absolute path, or a ValueError saying what is missing.

    Checked before transformers is called, because transformers treats any string that is not a
    folder as a Hub repository id and would try to download it.
    """
    where = f"the remote-code folder ({REMOTE_CODE_ENV} / --nemotron-remote-code) {str(folder)!r}"
    path = Path(folder)
    if not path.exists():
        raise ValueError(f"{where} does not exist; expected {_EXPECTED}")
    if not path.is_dir():
        raise ValueError(f"{where} is not a folder; expected {_EXPECTED}")
    config_file = path / "config.json"
    if not config_file.is_file():
        raise ValueError(f"{where} has no config.json; expected {_EXPECTED}")
    try:
        raw = json.loads(config_file.read_text())
    except json.JSONDecodeError as error:
        raise ValueError(f"{config_file} is not valid JSON: {error}") from None
    auto_map = raw.get("auto_map") or {}
    for auto_class in _AUTO_CLASSES:
        reference = auto_map.get(auto_class)
        if not isinstance(reference, str):
            raise ValueError(
                f"{config_file}: auto_map.{auto_class} is {reference!r}; expected 'module.ClassName' "
                "naming remote code in the folder"
            )
        if "--" in reference:
            raise ValueError(
                f"{config_file}: auto_map.{auto_class} = {reference!r} points at another Hub repository; "
                "only code inside the folder is loaded"
            )
        module_file = path / (reference.rsplit(".", 1)[0].replace(".", "/") + ".py")
        if not module_file.is_file():
            raise ValueError(f"{config_file}: auto_map.{auto_class} = {reference!r} but {module_file} does not exist")
    return path.resolve()


def tiny_remote_config(loaded: PreTrainedConfig, **overrides) -> PreTrainedConfig:
    """The loaded config rebuilt at ``TINY_CONFIG`` (plus ``overrides``), bidirectional like the built-in one.

    Rebuilt through ``from_dict`` rather than patched with ``setattr``: a config derives fields in
    ``__post_init__`` (RoPE validation, head size), which patching afterwards would leave stale.
    """
    missing = sorted(key for key in TINY_CONFIG if not hasattr(loaded, key))
    if missing:
        raise ValueError(
            f"the config loaded from {loaded._name_or_path!r} ({type(loaded).__name__}) has no field(s) "
            f"{missing}; the tiny config sets them at the top level, as the published config.json has them"
        )
    wanted = {**TINY_CONFIG, "is_causal": False, **overrides}
    config = type(loaded).from_dict({**loaded.to_dict(), **wanted})
    changed = [key for key, value in wanted.items() if not _holds(getattr(config, key, None), value)]
    if changed:
        raise ValueError(
            f"{type(loaded).__name__} did not keep the tiny value of {changed}: "
            + ", ".join(f"{key}={getattr(config, key, None)!r} (wanted {wanted[key]!r})" for key in changed)
        )
    return config


def _holds(actual, wanted) -> bool:
    """Equal, except that a config may add derived keys to a dict such as ``rope_parameters``."""
    if isinstance(wanted, dict) and isinstance(actual, dict):
        return all(actual.get(key) == value for key, value in wanted.items())
    return actual == wanted


def load_remote_model(
    folder: str | os.PathLike,
    seed: int = 0,
    dtype: torch.dtype = torch.float32,
    attn_implementation: str = "sdpa",
    **overrides,
) -> nn.Module:
    """NVIDIA's model class from ``folder`` at the tiny config, with seeded weights, like ``build_tiny_model``.

    The attention implementation defaults to the built-in model's (SDPA), since a bitwise comparison
    needs both sides on the same kernels. The weights are seeded, not the built-in model's: use
    ``copy_weights`` to compare the two on the same weights.
    """
    path = check_remote_code_folder(folder)
    loaded = AutoConfig.from_pretrained(path, trust_remote_code=True, local_files_only=True)
    config = tiny_remote_config(loaded, **overrides)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        # Built in the default dtype and cast after, as the built-in oracle is; the published
        # config.json's own dtype (bfloat16) would otherwise pick the initialisation dtype.
        model = AutoModel.from_config(
            config,
            trust_remote_code=True,
            dtype=torch.get_default_dtype(),
            attn_implementation=attn_implementation,
        )
    return model.to(dtype)


def copy_weights(source: nn.Module, target: nn.Module) -> None:
    """Load ``source``'s state into ``target`` by name, refusing any mismatch.

    A comparison on partly different weights would prove nothing, so every name must exist on both
    sides with the same shape and dtype; otherwise the ValueError lists each unmatched entry.
    """
    source_state, target_state = source.state_dict(), target.state_dict()
    problems = [f"{name}: only in source" for name in sorted(source_state.keys() - target_state.keys())]
    problems += [f"{name}: only in target" for name in sorted(target_state.keys() - source_state.keys())]
    for name in sorted(source_state.keys() & target_state.keys()):
        mine, theirs = source_state[name], target_state[name]
        if mine.shape != theirs.shape or mine.dtype != theirs.dtype:
            problems.append(
                f"{name}: {tuple(mine.shape)} {mine.dtype} in source, {tuple(theirs.shape)} {theirs.dtype} in target"
            )
    if problems:
        raise ValueError(
            f"cannot copy the weights of {type(source).__name__} into {type(target).__name__}; unmatched:\n  "
            + "\n  ".join(problems)
        )
    target.load_state_dict(source_state, strict=True)


def oracle_model_factory(folder: str | os.PathLike | None = None) -> Callable[..., nn.Module]:
    """A builder with ``build_tiny_model``'s signature: NVIDIA's model when a folder is named, else the built-in.

    ``folder`` defaults to ``$PARITY_NEMOTRON_REMOTE_CODE``. The remote builder gives NVIDIA's model
    the built-in model's seeded weights, so swapping one builder for the other changes the code under
    test and nothing else.
    """
    folder = folder or os.environ.get(REMOTE_CODE_ENV) or None
    if folder is None:
        return build_tiny_model
    path = check_remote_code_folder(folder)

    def build_remote_model(seed: int = 0, dtype: torch.dtype = torch.float32, **overrides) -> nn.Module:
        model = load_remote_model(path, seed, dtype, **overrides)
        copy_weights(build_tiny_model(seed, dtype, **overrides), model)
        return model

    return build_remote_model
