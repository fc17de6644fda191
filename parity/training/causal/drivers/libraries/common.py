"""What the three library loops share (docs/causal-lm.md, The field's own loops): the rank and world of the
process group the launch made, names swapped in a library module's namespace for one call and put back, and the
harness's model wrapped in the call a library makes of its own model."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch
import torch.distributed as dist


def world() -> int:
    return dist.get_world_size() if dist.is_initialized() else 1


def rank() -> int:
    return dist.get_rank() if dist.is_initialized() else 0


@contextlib.contextmanager
def swapped(module, **names) -> Iterator[None]:
    """``module``'s ``names`` replaced for the call inside, then put back (every swap is listed in the loop's
    ``.patched``, so the verdict says it)."""
    kept = {name: getattr(module, name) for name in names}
    for name, value in names.items():
        setattr(module, name, value)
    try:
        yield
    finally:
        for name, value in kept.items():
            setattr(module, name, value)


def decoder_layers(model: torch.nn.Module) -> list[torch.nn.Module]:
    """The decoder layers of the harness's model (``model.model.layers``) or of a library's own (``layers``)."""
    for path in ("layers", "model.layers", "inner.model.layers"):
        found = model
        try:
            for part in path.split("."):
                found = getattr(found, part)
        except AttributeError:
            continue
        return list(found.values()) if isinstance(found, torch.nn.ModuleDict) else list(found)
    return []
