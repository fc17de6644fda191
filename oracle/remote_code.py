"""The oracle built from NVIDIA's own remote code on disk, at the tiny config (docs/diffusion-model.md).

The built-in oracle (``oracle.nemotron_diffusion``) restates the published contract; this module loads
the published code itself, as published, through transformers' remote-code loading, so the two can be
held to each other bit for bit on the same weights. The folder's classes are imported and probed once
per process (does it run under this transformers, does it return the contract, is it bidirectional);
building a model afterwards costs what building the built-in one costs. The loader takes only an
existing local folder, refused before transformers sees it otherwise, so transformers never looks
anything up on the Hub; a Hub id is resolved to its snapshot folder beforehand, by
``activate_remote_code`` through ``oracle.remote_source``. Imports nothing from ``impl`` or ``parity``.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import torch
import transformers
from torch import nn
from transformers import PreTrainedConfig
from transformers.dynamic_module_utils import get_class_from_dynamic_module, get_relative_imports

from oracle.nemotron_diffusion import TINY_CONFIG, build_tiny_model
from oracle.remote_source import REMOTE_CODE_ENV, RemoteCodeSource, first_line, resolve_remote_code, sha256_of

_EXPECTED = (
    "a local folder holding NVIDIA's config.json, configuration_*.py and modeling_*.py "
    "(a Hub id is resolved to its snapshot folder by --nemotron-remote-code)"
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
    code_files(path)
    return path.resolve()


def code_files(folder: str | os.PathLike) -> list[str]:
    """The files the folder's code is made of: ``config.json``, the modules its ``auto_map`` names, and
    every module those import relatively (``from .x import``), recursively, as transformers copies them.

    A ValueError names the first file missing and who needs it: transformers would fail later, deep
    in its import machinery.
    """
    path = Path(folder)
    config_file = path / "config.json"
    auto_map = json.loads(config_file.read_text())["auto_map"]
    pending = [(auto_map[c].rsplit(".", 1)[0] + ".py", f"{config_file}: auto_map.{c} = {auto_map[c]!r}") for c in _AUTO_CLASSES]
    found: list[str] = []
    while pending:
        name, needed_by = pending.pop(0)
        if name in found:
            continue
        if not (path / name).is_file():
            raise ValueError(f"{needed_by} but {path / name} does not exist")
        found.append(name)
        pending += [(f"{module}.py", f"{path / name} imports .{module}") for module in sorted(get_relative_imports(path / name))]
    return ["config.json", *sorted(found)]


class RemoteCodeError(RuntimeError):
    """The folder's code cannot serve as the oracle under this installation; the message says why and what to do.

    Raised once, at load, with one line: never a traceback from deep inside the folder's code.
    """


#: The transformers releases that run NVIDIA's published remote code: the harness's own range
#: (docs/install.md), 5.24 and later through the shim below (docs/diffusion-model.md, transformers versions).
SUPPORTED_REMOTE_TRANSFORMERS = ">=5.5,<6"

#: The names transformers 5.24 renames to ``cache`` in every ``ModelOutput.__init__``.
OLD_CACHE_NAMES = ("past_key_values", "cache_params")


def restore_declared_cache_fields(model_class: type) -> tuple[str, ...]:
    """The shim at the loader boundary for transformers 5.24's cache rename; what it did, one line each.

    5.24 wraps the ``__init__`` of every ``ModelOutput`` dataclass so that ``past_key_values=`` (or
    ``cache_params=``) arrives as ``cache=``: right for its own classes, which now declare ``cache``,
    fatal for remote code whose output class still declares ``past_key_values`` (NVIDIA's does), whose
    construction then fails on the unknown keyword. For each such class of the model's module, and only
    where the installed release wrapped it, the dataclass's own ``__init__`` is put back (set on the class
    past transformers' metaclass hook). The folder's files are not touched. A value handed as
    ``past_key_values`` is then still kept the 5.24 way, as the attribute ``cache`` (``ModelOutput``'s
    own ``__setattr__``); the harness never reads it (loss and logits are what it trains on).
    """
    module = sys.modules[model_class.__module__]
    restored = []
    for name, value in sorted(vars(module).items()):
        output_class = isinstance(value, type) and issubclass(value, transformers.utils.ModelOutput)
        if not (output_class and dataclasses.is_dataclass(value)):
            continue
        declared = {field.name for field in dataclasses.fields(value)}
        wrapped = getattr(value.__dict__.get("__init__"), "__wrapped__", None)
        if wrapped is None or "cache" in declared or not declared & set(OLD_CACHE_NAMES):
            continue
        type.__setattr__(value, "__init__", wrapped)
        restored.append(
            f"shim: transformers {transformers.__version__} renames past_key_values to cache in every ModelOutput "
            f"__init__; {name} declares {', '.join(sorted(declared & set(OLD_CACHE_NAMES)))}, so its own __init__ "
            "is restored (oracle.remote_code.restore_declared_cache_fields)"
        )
    return tuple(restored)


def remedy(folder: str | os.PathLike) -> str:
    return f"install transformers{SUPPORTED_REMOTE_TRANSFORMERS} or use `tox -e nvidia -- {folder}`"


@dataclass(frozen=True)
class RemoteClasses:
    """The folder's config and model classes and its own config.json as loaded, once per folder."""

    folder: Path
    config_class: type
    model_class: type
    loaded: PreTrainedConfig
    #: What the loader changed for the installed release (``restore_declared_cache_fields``), one line each.
    shims: tuple[str, ...] = ()


@functools.lru_cache(maxsize=None)
def remote_classes(folder: str | os.PathLike) -> RemoteClasses:
    """Import the folder's classes through transformers' remote-code loading, once per folder and process."""
    path = check_remote_code_folder(folder)
    auto_map = json.loads((path / "config.json").read_text())["auto_map"]
    try:
        config_class = get_class_from_dynamic_module(auto_map["AutoConfig"], path, local_files_only=True)
        model_class = get_class_from_dynamic_module(auto_map["AutoModel"], path, local_files_only=True)
        shims = restore_declared_cache_fields(model_class)
        loaded = config_class.from_pretrained(path, local_files_only=True)
    except Exception as error:  # an import that fails inside the folder's code
        raise RemoteCodeError(
            f"transformers {transformers.__version__} cannot import the remote code in {path} "
            f"({type(error).__name__}: {first_line(error)}); {remedy(path)}"
        ) from None
    return RemoteClasses(path, config_class, model_class, loaded, shims)


def tiny_remote_config(classes: RemoteClasses, **overrides) -> PreTrainedConfig:
    """The folder's config class at ``TINY_CONFIG`` (plus ``overrides``), from its own published ``config.json``.

    Nothing the published config lacks is added: bidirectionality is the model's own business (its
    diffusion mode) and is checked by behaviour, not forced through a config field. Built through
    ``from_dict`` rather than patched with ``setattr``: a config derives fields at construction
    (RoPE validation, head size) that patching afterwards would leave stale.
    """
    missing = sorted(key for key in TINY_CONFIG if not hasattr(classes.loaded, key))
    if missing:
        raise ValueError(
            f"the config of {classes.folder} ({classes.config_class.__name__}) has no field(s) {missing}; "
            "the tiny config sets them at the top level, as the published config.json has them"
        )
    wanted = {**TINY_CONFIG, **overrides}
    config = classes.config_class.from_dict({**classes.loaded.to_dict(), **wanted})
    changed = [key for key, value in wanted.items() if not _holds(getattr(config, key, None), value)]
    if changed:
        raise ValueError(
            f"{classes.config_class.__name__} did not keep the tiny value of {changed}: "
            + ", ".join(f"{key}={getattr(config, key, None)!r} (wanted {wanted[key]!r})" for key in changed)
        )
    return config


def _holds(actual, wanted) -> bool:
    """Equal, except that a config may add derived keys to a dict such as ``rope_parameters``."""
    if isinstance(wanted, dict) and isinstance(actual, dict):
        return all(actual.get(key) == value for key, value in wanted.items())
    return actual == wanted


def _build(
    classes: RemoteClasses, config: PreTrainedConfig, seed: int, dtype: torch.dtype, attn_implementation: str
) -> nn.Module:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        # Built in the default dtype and cast after, as the built-in oracle is; the published
        # config.json's own dtype (bfloat16) would otherwise pick the initialisation dtype.
        model = classes.model_class._from_config(
            config, dtype=torch.get_default_dtype(), attn_implementation=attn_implementation
        )
    return model.to(dtype)


@functools.lru_cache(maxsize=None)
def check_remote_model(folder: str | os.PathLike, attn_implementation: str = "sdpa") -> RemoteClasses:
    """Load the folder's classes and probe its model once: it must run the published training call
    under this transformers, return the published contract, and be bidirectional by behaviour.

    Raises ``RemoteCodeError`` (one line naming the installed transformers and the remedy) when the
    code cannot run here, ``ValueError`` when it runs but breaks the contract.
    """
    classes = remote_classes(folder)
    ids = torch.arange(1, 9).remainder(TINY_CONFIG["mask_token_id"])[None, :].repeat(2, 1)
    masked = torch.zeros_like(ids, dtype=torch.bool)
    masked[:, ::3] = True
    p_mask = torch.full(ids.shape, 0.5)
    edited = ids.clone()
    edited[:, -1] = (edited[:, -1] + 1) % TINY_CONFIG["mask_token_id"]
    config = tiny_remote_config(classes)
    try:
        model = _build(classes, config, 0, torch.float32, attn_implementation).eval()
        with torch.no_grad():
            output = model(input_ids=ids, labels=ids, masked_indices=masked.clone(), p_mask=p_mask)
            later = model(input_ids=edited, labels=edited, masked_indices=masked.clone(), p_mask=p_mask)
    except Exception as error:
        raise RemoteCodeError(
            f"transformers {transformers.__version__} cannot run this folder's remote code "
            f"({type(error).__name__}: {first_line(error)}); {remedy(classes.folder)}"
        ) from None
    loss = getattr(output, "loss", None)
    if not (isinstance(loss, tuple) and len(loss) == 2 and getattr(output, "logits", None) is not None):
        raise ValueError(
            f"{classes.model_class.__name__} from {classes.folder} does not return the published contract "
            f"(an output with .loss = (sum_loss, num_mask_tokens) and .logits); got {type(output).__name__}"
        )
    if torch.equal(output.logits[:, 0], later.logits[:, 0]):
        raise ValueError(
            f"{classes.model_class.__name__} from {classes.folder} is not bidirectional: changing the last "
            "token left the first position's logits unchanged"
        )
    return classes


def load_remote_model(
    folder: str | os.PathLike,
    seed: int = 0,
    dtype: torch.dtype = torch.float32,
    attn_implementation: str = "sdpa",
    **overrides,
) -> nn.Module:
    """NVIDIA's model class from ``folder`` at the tiny config, with seeded weights, like ``build_tiny_model``.

    The folder is loaded and probed once per process (``check_remote_model``); each call then only
    builds a model. The attention implementation defaults to the built-in model's (SDPA), since a
    bitwise comparison needs both sides on the same kernels. The weights are seeded, not the
    built-in model's: use ``copy_weights`` to compare the two on the same weights.
    """
    classes = check_remote_model(check_remote_code_folder(folder), attn_implementation)
    return _build(classes, tiny_remote_config(classes, **overrides), seed, dtype, attn_implementation)


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
    check_remote_model(path)

    def build_remote_model(seed: int = 0, dtype: torch.dtype = torch.float32, **overrides) -> nn.Module:
        model = load_remote_model(path, seed, dtype, **overrides)
        copy_weights(build_tiny_model(seed, dtype, **overrides), model)
        return model

    return build_remote_model


def activate_remote_code(named: str | os.PathLike | None = None, require_pinned: bool = False) -> RemoteCodeSource | None:
    """Set up NVIDIA's code as the oracle model, once per process: the pytest plugin and ``python -m parity`` share it.

    ``named`` (else ``$PARITY_NEMOTRON_REMOTE_CODE``) is resolved to a folder (a Hub id to its snapshot,
    ``oracle.remote_source``), checked, hashed, loaded and probed; then ``$PARITY_NEMOTRON_REMOTE_CODE``
    names that folder, so every model this process and its children (DDP ranks, xdist workers) build
    comes from the files whose hashes the returned source lists. None when nothing is named (the
    built-in oracle). Raises ``RemoteCodeError`` or ``ValueError``, each one line.
    """
    named = named or os.environ.get(REMOTE_CODE_ENV) or None
    if named is None:
        return None
    source = resolve_remote_code(named, require_pinned)
    try:
        folder = check_remote_code_folder(source.folder)
    except ValueError as error:
        if source.repo_id is None:
            raise
        raise ValueError(f"{source.repo_id} at commit {source.commit} holds no usable remote code: {error}") from None
    files = tuple((name, sha256_of(folder / name)) for name in code_files(folder))
    classes = check_remote_model(folder)
    os.environ[REMOTE_CODE_ENV] = str(folder)
    return replace(source, folder=folder, files=files, shims=classes.shims)
