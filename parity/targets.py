"""The registry of targets: the implementations the properties run against (docs/design.md, Targets and interfaces).

A target bundles up to three interfaces, each named by an import path and loaded only when a
property asks for it, so ``--parity-target known-bug:local-mean`` never imports the dataset code and
listing targets never imports transformers. A property whose interface a target lacks is skipped.

Installed packages add targets through the ``parity.targets`` entry-point group; each entry point
loads to a :class:`Target`::

    [project.entry-points."parity.targets"]
    my-dataset = "my_pkg.parity_adapter:TARGET"

Entry points are loaded only when their target is selected by name or every target is listed, so a
slow or broken adapter never slows or breaks a run that does not ask for it. Built-in targets that
need an optional package (``requires``) exist only when it is installed and, like installed
targets, appear in the report and bench only when selected.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from parity.safety.crash import ConfigDeclined  # noqa: F401 - a target raises parity.targets.ConfigDeclined
from parity.safety.releases import install_command, transformers_trainer_defects

if TYPE_CHECKING:  # the Protocols' annotations only: naming a target imports no model (an xdist controller)
    import numpy as np
    import torch

ENTRY_POINT_GROUP = "parity.targets"
Interface = Literal["dataset", "pipeline", "mock", "loss", "trainer", "loop", "causal_trainer"]


def load_attribute(path: str) -> Any:
    """The object a ``"module:attribute"`` path names (an interface, a property's check), imported now."""
    module, colon, attribute = path.partition(":")
    if not colon or not module or not attribute:
        raise ValueError(f"an import path is 'module:attribute', got {path!r}")
    return getattr(importlib.import_module(module), attribute)


@runtime_checkable
class GPTDatasetLike(Protocol):
    """What a dataset target returns: indexable samples plus its two index arrays."""

    document_index: np.ndarray
    shuffle_index: np.ndarray

    def __len__(self) -> int: ...

    def __getitem__(self, idx: int | None) -> dict[str, torch.Tensor]: ...


class DatasetFactory(Protocol):
    """``(documents, config) -> dataset``: one 1-D int64 array per document and a
    :class:`parity.dataset_config.GPTDatasetConfig` (docs/dataset.md). Raises
    :class:`ConfigDeclined` for a config the target cannot express."""

    def __call__(self, documents: Sequence[np.ndarray], config: Any) -> GPTDatasetLike: ...


class DiffusionLoss(Protocol):
    """The windowed masked-diffusion loss of docs/trainer.md, split the way a trainer calls it.

    Batches are Hugging Face style dicts. A raw microbatch has ``input_ids`` and optionally
    ``attention_mask`` and ``labels`` (-100 = not supervised). A noised microbatch carries what the
    model's published forward accepts: noisy ``input_ids``, target ``labels``, ``masked_indices``,
    ``p_mask`` and the ``attention_mask`` to run with (None when padding is attended).
    """

    #: What ``transformers.Trainer.loss_is_scaled_for_ga`` must be for this loss (docs/trainer.md).
    loss_is_scaled_for_ga: bool

    def prepare_window(
        self,
        window: Sequence[Mapping[str, torch.Tensor]],
        *,
        mask_token_id: int,
        eos_token_id: int | None,
        eps: float,
        generator: torch.Generator,
        vocab_size: int | None = None,
    ) -> list[dict[str, torch.Tensor | None]]:
        """Noise the whole window now, in order, from ``generator`` (the published draw order); a
        ``ValueError`` for a mask id outside ``[0, vocab_size)`` or ``eps`` outside ``(0, 1]``."""
        ...

    def window_count(
        self,
        window: Sequence[Mapping[str, torch.Tensor | None]],
        *,
        average_tokens_across_devices: bool = True,
        group: Any = None,
    ) -> Any: ...

    def microbatch_loss(
        self, model: torch.nn.Module, noised: Mapping[str, torch.Tensor | None], count: Any = None
    ) -> torch.Tensor: ...


@dataclass(frozen=True)
class Target:
    """One implementation under test. Interfaces are ``"module:attribute"`` paths, loaded lazily."""

    name: str
    description: str
    expect: Literal["pass", "fail"]
    dataset: str | None = None
    loss: str | None = None
    trainer: str | None = None
    #: megatron's data pipeline: ``(prefixes, weights, split, sizes, config, *, path_to_cache,
    #: fast_cache_load=False) -> [train, valid, test]`` over files on disk (docs/dataset.md, The pipeline).
    pipeline: str | None = None
    #: A dataset factory that serves only upstream's mock documents (docs/dataset.md, Mock data).
    mock: str | None = None
    #: A causal-LM training step the user writes, ``parity.training.causal.drivers.loop.CausalLoop``
    #: (docs/causal-lm.md, The loop interface).
    loop: str | None = None
    #: A ``transformers.Trainer`` subclass training a causal LM (docs/causal-lm.md, Trainers and their contract
    #: per release), run by ``parity.training.causal.drivers.hf_trainer``.
    causal_trainer: str | None = None
    #: Whether every returned tensor owns its memory or refuses writes (docs/dataset.md, Shared masks). True: aliasing (tokens/labels sharing
    #: storage, cached tensors handed out by reference) fails the suite. False: it is reported as
    #: a hazard beside a passing verdict (docs/dataset.md, Hazards).
    promises_copies: bool = False
    #: Whether the target refuses bad input with impl's exception types (docs/dataset.md, Bad input): documents that
    #: cannot serve a sample with a ValueError, a negative index with an IndexError, an index that is not an int
    #: with a TypeError. True for impl: its promises are held by the table's ``validation/*`` properties.
    validates_input: bool = False
    #: Whether the dataset factory reads documents written to disk: given documents with a
    #: ``path_prefix``, it serves them from those ``.bin``/``.idx`` files (docs/dataset.md, Files).
    reads_files: bool = False
    #: A distribution this built-in target needs (it exists only when that is installed); its
    #: installed version is shown in the report.
    requires: str | None = None
    #: Another target shown beside this one in the report when this one is selected.
    companion: str | None = None
    #: Defects of the target's own upstream code the suite finds, for the report to name with the command that
    #: writes them up (``python -m parity repro``; docs/dataset.md, Reproducers).
    upstream_defects: tuple[str, ...] = ()
    #: Known crashes of the target: substrings of ``"ExceptionType at path:line"``. A matching
    #: crash is reported as "crashed (known)" instead of failing (docs/dataset.md, Crashes).
    known_crashes: tuple[str, ...] = ()

    def provides(self, interface: Interface) -> bool:
        return getattr(self, interface) is not None

    def load(self, interface: Interface) -> Any:
        """The interface object; ``LookupError`` when this target does not provide it."""
        path = getattr(self, interface)
        if path is None:
            raise LookupError(f"target {self.name!r} provides no {interface} interface")
        return load_attribute(path)

    @property
    def is_known_bug(self) -> bool:
        return self.expect == "fail"

    @property
    def version(self) -> str | None:
        """The installed version of ``requires`` (read from package metadata, nothing imported)."""
        if self.requires is None:
            return None
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version(self.requires)
        except PackageNotFoundError:
            return None


BUILTIN_TARGETS: tuple[Target, ...] = (
    Target(
        name="impl",
        description="the production code of this repository",
        expect="pass",
        dataset="parity.dataset.impl:impl_dataset",
        loss="impl.diffusion_loss:WINDOWED_LOSS",
        trainer="impl.trainer:WindowedDiffusionTrainer",
        causal_trainer="impl.causal_trainer:WindowedCausalTrainer",
        promises_copies=True,
        validates_input=True,
    ),
    Target(
        name="known-bug:cache-alias",
        description="dataset cache stores the first sample's loss mask by reference",
        expect="fail",
        dataset="parity.dataset.impl:cache_alias_dataset",
    ),
    Target(
        name="known-bug:cache-accumulate",
        description="dataset cache hands out the cached loss mask itself on every hit",
        expect="fail",
        dataset="parity.dataset.impl:cache_accumulate_dataset",
    ),
    Target(
        name="known-bug:local-mean",
        description="per-microbatch normalisation; the trainer averages the local means",
        expect="fail",
        loss="impl.known_bugs.local_mean:LOCAL_MEAN_LOSS",
        trainer="impl.known_bugs.local_mean_trainer:LocalMeanTrainer",
    ),
    Target(
        name="logits",
        description="a second trainer in the logits style: its own 1/p-weighted loss from .logits, masks kept local",
        expect="pass",
        trainer="impl.logits_trainer:LogitsDiffusionTrainer",
    ),
    Target(
        name="known-bug:logits-local-mean",
        description="the logits-style trainer before its fix: local means, the Trainer divides by the accumulation steps",
        expect="fail",
        trainer="impl.known_bugs.logits_local_mean_trainer:LogitsLocalMeanTrainer",
    ),
    Target(
        name="known-bug:causal-local-mean",
        description="impl's causal-LM trainer before its fix: per-microbatch means, the Trainer divides by the "
        "accumulation steps (every transformers.Trainer before 4.46)",
        expect="fail",
        causal_trainer="impl.known_bugs.causal_local_mean_trainer:CausalLocalMeanTrainer",
    ),
)

#: Causal-LM trainers from outside the repository (docs/causal-lm.md, Trainers and their contract per release):
#: selectable by name (``--target``); the report's ``causal-lm`` scenario shows impl's and its known bug by default.
CAUSAL_TARGETS: tuple[Target, ...] = (
    Target(
        name="transformers-trainer",
        description="transformers' own Trainer as shipped, training a causal LM with the model's own loss",
        expect="fail" if transformers_trainer_defects() else "pass",
        causal_trainer="transformers:Trainer",
        upstream_defects=transformers_trainer_defects(),
    ),
)

#: TRL's ``SFTTrainer`` as shipped, in each of its ways of batching (docs/causal-lm.md, TRL).
TRL_TARGETS: tuple[Target, ...] = tuple(
    Target(name=f"trl-sft:{name}", description=f"TRL's SFTTrainer as shipped, {words}",
           expect="fail" if transformers_trainer_defects(inherited=True) else "pass",
           causal_trainer=f"parity.training.causal.drivers.trl_sft:{mode}", requires="trl",
           upstream_defects=transformers_trainer_defects(inherited=True))
    for name, mode, words in (
        ("completion-only", "COMPLETION_ONLY", "completion_only_loss on padded microbatches"),
        ("padding-free", "PADDING_FREE", "padding_free: each microbatch flattened, positions restarting per document"),
        ("packing", "PACKING", "packing with packing_strategy='bfd'"),
    )
)

#: megatron-core 0.16.1's index helper rejects its own sample index when a kept partial sample
#: ends in an empty document (docs/dataset.md, Crashes).
MEGATRON_INDEX_CRASH = "AssertionError at megatron/core/datasets/helpers.py"

#: Built-ins that need megatron-core (the ``megatron`` extra; docs/install.md).
OPTIONAL_TARGETS: tuple[Target, ...] = (
    Target(
        name="megatron-core",
        description="megatron-core's own GPTDataset, as installed (has the cache bug)",
        expect="fail",
        dataset="parity.dataset.megatron:megatron_dataset",
        pipeline="parity.dataset.megatron_pipeline:megatron_pipeline",
        reads_files=True,
        requires="megatron-core",
        companion="megatron-core:fixed",
        known_crashes=(MEGATRON_INDEX_CRASH,),
        upstream_defects=(
            "the loss-mask cache (FILL stores the first sample's masks by reference)",
            "the index cache key (it leaves out add_extra_token_to_sequence and drop_last_partial_validation_sequence)",
        ),
    ),
    Target(
        name="megatron-core:fixed",
        description="megatron-core's GPTDataset fixed: a copy cached on FILL, the index settings in the cache key",
        expect="pass",
        dataset="parity.dataset.megatron:fixed_megatron_dataset",
        pipeline="parity.dataset.megatron_pipeline:fixed_megatron_pipeline",
        reads_files=True,
        requires="megatron-core",
        companion="megatron-core",
        known_crashes=(MEGATRON_INDEX_CRASH,),
    ),
    Target(
        name="megatron-core:mock",
        description="megatron-core's MockGPTDataset over its MockGPTLowLevelDataset (--mock-data), as installed",
        expect="fail",
        mock="parity.dataset.megatron_mock:mock_dataset",
        requires="megatron-core",
        companion="megatron-core:mock:fixed",
        known_crashes=(MEGATRON_INDEX_CRASH,),
    ),
    Target(
        name="megatron-core:mock:fixed",
        description="megatron-core's MockGPTDataset with the upstream fix only: a copy cached on FILL",
        expect="pass",
        mock="parity.dataset.megatron_mock:fixed_mock_dataset",
        requires="megatron-core",
        companion="megatron-core:mock",
        known_crashes=(MEGATRON_INDEX_CRASH,),
    ),
    Target(
        name="megatron-schedule:per-token",
        description="megatron-core's own schedule and DDP training a causal LM, calculate_per_token_loss on",
        expect="pass",
        loop="parity.training.causal.drivers.megatron_schedule:PER_TOKEN",
        requires="megatron-core",
        companion="megatron-schedule",
    ),
    Target(
        name="megatron-schedule",
        description="megatron-core's own schedule and DDP training a causal LM, as configured by default "
        "(calculate_per_token_loss off: per-microbatch means divided by num_microbatches)",
        expect="fail",
        loop="parity.training.causal.drivers.megatron_schedule:DEFAULT",
        requires="megatron-core",
        companion="megatron-schedule:per-token",
    ),
)


#: Bugs planted for the harness's tests of its own search (docs/fleet.md): selectable by name, never a
#: column of the report or bench, since the default run is not meant to find them.
PLANTED_TARGETS: tuple[Target, ...] = (
    Target(
        name="planted:rare-corner",
        description="impl's dataset serving the shuffle reversed, only on the test split with num_epochs=3, no "
        "extra token and sequences of 7 tokens or more (a rare corner, planted for the fleet search)",
        expect="fail",
        dataset="parity.dataset.impl:rare_corner_dataset",
    ),
)


class UnknownTargetError(LookupError):
    """A target name that neither the built-ins nor an installed entry point defines."""


class DuplicateTargetError(UnknownTargetError):
    """Two installed packages register the same target name: a usage error naming both, never a silent choice."""


class TargetLoadError(UnknownTargetError):
    """An installed entry point that could not be loaded as a target (raised only when selected).

    An ``UnknownTargetError`` too: the target cannot be provided, and every caller that reports an
    unknown name as a usage error (``pytest --parity-target``, ``python -m parity``) reports this one the
    same way, with the adapter's own import error."""


def default_targets() -> dict[str, Target]:
    """The targets every report and bench shows: the built-ins that need nothing optional."""
    return {target.name: target for target in BUILTIN_TARGETS}


def builtin_targets() -> dict[str, Target]:
    """The default targets, the planted ones, the causal-LM trainers, and the optional built-ins whose package is
    installed."""
    targets = default_targets()
    targets.update({t.name: t for t in PLANTED_TARGETS})
    targets.update({t.name: t for t in CAUSAL_TARGETS})
    targets.update({t.name: t for t in (*OPTIONAL_TARGETS, *TRL_TARGETS) if t.version is not None})
    return targets


def _load_entry_point(entry_point, taken: Mapping[str, Target]) -> Target:
    try:
        target = entry_point.load()
    except Exception as error:  # a broken adapter says so, and only when it is asked for
        raise TargetLoadError(
            f"entry point {entry_point.name!r} in group {ENTRY_POINT_GROUP!r} failed to load: "
            f"{type(error).__name__}: {error}"
        ) from error
    if not isinstance(target, Target):
        raise TypeError(
            f"entry point {entry_point.name!r} in group {ENTRY_POINT_GROUP!r} must load a "
            f"parity.targets.Target, got {type(target).__name__}"
        )
    if target.name in taken:
        raise ValueError(f"entry point {entry_point.name!r} redefines the target {target.name!r}")
    return target


def all_targets() -> dict[str, Target]:
    """Built-in targets plus those registered by installed packages (a built-in name cannot be
    replaced). Loads every entry point: for listing; a run selects one with :func:`get_target`."""
    targets = builtin_targets()
    for entry_point in entry_points(group=ENTRY_POINT_GROUP):
        target = _load_entry_point(entry_point, targets)
        targets[target.name] = target
    return targets


def listed_targets() -> list[Target | str]:
    """Every target for ``python -m parity targets``: a broken entry point is a line saying why."""
    listed: list[Target | str] = []
    builtins = builtin_targets()
    listed += builtins.values()
    for entry_point in entry_points(group=ENTRY_POINT_GROUP):
        try:
            listed.append(_load_entry_point(entry_point, builtins))
        except (TargetLoadError, TypeError, ValueError) as error:
            listed.append(f"{entry_point.name:28} NOT LOADED: {error}")
    return listed


def get_target(name: str) -> Target:
    """The target called ``name``: a built-in, else the installed entry point of that name (the
    only one loaded); ``UnknownTargetError`` listing the known names otherwise."""
    builtins = builtin_targets()
    if name in builtins:
        return builtins[name]
    installed = list(entry_points(group=ENTRY_POINT_GROUP))
    matching = [entry_point for entry_point in installed if entry_point.name == name]
    if len(matching) > 1:  # which one loads would depend on the order the packages are found in
        registered = " and ".join(f"{getattr(e.dist, 'name', '?')} ({e.value})" for e in matching)
        raise DuplicateTargetError(f"target {name!r} is registered by more than one package: {registered}; "
                                   f"uninstall one, or rename its {ENTRY_POINT_GROUP!r} entry point")
    if matching:
        return _load_entry_point(matching[0], builtins)
    known = ", ".join(sorted([*builtins, *(e.name for e in installed)]))
    hint = ""
    if any(t.name == name for t in OPTIONAL_TARGETS):
        hint = f" (it needs megatron-core: {install_command('megatron-core')}, docs/install.md)"
    raise UnknownTargetError(f"unknown target {name!r}{hint}; known targets: {known}")

