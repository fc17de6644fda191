"""The registry of targets: the implementations the properties run against (docs/design.md, Targets and interfaces).

A target bundles up to three interfaces, each named by an import path and loaded only when a
property asks for it, so ``--target known-bug:local-mean`` never imports the dataset code and
listing targets never imports transformers. A property whose interface a target lacks is skipped.

Installed packages add targets through the ``parity.targets`` entry-point group; each entry point
loads to a :class:`Target`::

    [project.entry-points."parity.targets"]
    my-dataset = "my_pkg.parity_adapter:TARGET"
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np
import torch

ENTRY_POINT_GROUP = "parity.targets"
Interface = Literal["dataset", "loss", "trainer"]


@runtime_checkable
class GPTDatasetLike(Protocol):
    """What a dataset target returns: indexable samples plus its two index arrays."""

    document_index: np.ndarray
    shuffle_index: np.ndarray

    def __len__(self) -> int: ...

    def __getitem__(self, idx: int | None) -> dict[str, torch.Tensor]: ...


class DatasetFactory(Protocol):
    """``(documents, spec) -> dataset``: one 1-D int64 array per document, the config of docs/dataset.md."""

    def __call__(self, documents: Sequence[np.ndarray], spec: Any) -> GPTDatasetLike: ...


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
    ) -> list[dict[str, torch.Tensor | None]]: ...

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

    def provides(self, interface: Interface) -> bool:
        return getattr(self, interface) is not None

    def load(self, interface: Interface) -> Any:
        """The interface object; ``LookupError`` when this target does not provide it."""
        path = getattr(self, interface)
        if path is None:
            raise LookupError(f"target {self.name!r} provides no {interface} interface")
        module, _, attribute = path.partition(":")
        return getattr(importlib.import_module(module), attribute)

    @property
    def is_known_bug(self) -> bool:
        return self.expect == "fail"


BUILTIN_TARGETS: tuple[Target, ...] = (
    Target(
        name="impl",
        description="the production code of this repository",
        expect="pass",
        dataset="impl.gpt_dataset:GPTDataset",
        loss="impl.diffusion_loss:WINDOWED_LOSS",
        trainer="impl.trainer:WindowedDiffusionTrainer",
    ),
    Target(
        name="known-bug:cache-alias",
        description="dataset cache stores the first sample's loss mask by reference",
        expect="fail",
        dataset="impl.known_bugs.cache_alias:CacheAliasGPTDataset",
    ),
    Target(
        name="known-bug:cache-accumulate",
        description="dataset cache hands out the cached loss mask itself on every hit",
        expect="fail",
        dataset="impl.known_bugs.cache_accumulate:CacheAccumulateGPTDataset",
    ),
    Target(
        name="known-bug:local-mean",
        description="per-microbatch normalisation; the trainer averages the local means",
        expect="fail",
        loss="impl.known_bugs.local_mean:LOCAL_MEAN_LOSS",
        trainer="impl.known_bugs.local_mean_trainer:LocalMeanTrainer",
    ),
)


class UnknownTargetError(LookupError):
    """A target name that neither the built-ins nor an installed entry point defines."""


def all_targets() -> dict[str, Target]:
    """Built-in targets plus those registered by installed packages (a built-in name cannot be replaced)."""
    targets = {target.name: target for target in BUILTIN_TARGETS}
    for entry_point in entry_points(group=ENTRY_POINT_GROUP):
        target = entry_point.load()
        if not isinstance(target, Target):
            raise TypeError(
                f"entry point {entry_point.name!r} in group {ENTRY_POINT_GROUP!r} must load a "
                f"parity.targets.Target, got {type(target).__name__}"
            )
        if target.name in targets:
            raise ValueError(f"entry point {entry_point.name!r} redefines the target {target.name!r}")
        targets[target.name] = target
    return targets


def get_target(name: str) -> Target:
    targets = all_targets()
    try:
        return targets[name]
    except KeyError:
        known = ", ".join(sorted(targets))
        raise UnknownTargetError(f"unknown target {name!r}; known targets: {known}") from None
