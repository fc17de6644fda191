"""What a target is: a name, the verdict it expects, and up to seven interfaces named by import path, each loaded
only when a property asks for it; and the ``Protocol`` of each interface the harness owns (docs/design.md, Targets
and interfaces). The registry that finds a target by name is :mod:`parity.targets`; the targets this repository
ships are :mod:`parity.targets.catalogue`."""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol, get_args, runtime_checkable

if TYPE_CHECKING:  # the Protocols' annotations only: naming a target imports no model (an xdist controller)
    import numpy as np
    import torch

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
    def modules(self) -> tuple[str, ...]:
        """The modules this target's interfaces live in, each once, none imported."""
        paths = (getattr(self, interface) for interface in get_args(Interface))
        return tuple(dict.fromkeys(path.partition(":")[0] for path in paths if path is not None))

    def import_modules(self) -> None:
        """Imports :attr:`modules` now, as a spawned child's start (parity/report/isolation.py), so their import
        time is not charged to the scenario's bound."""
        for module in self.modules:
            importlib.import_module(module)

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
