"""Bitwise comparison of dataset samples (docs/dataset.md, Verdicts): same keys, dtypes, shapes, values.

A failure names the sample, the key and the first differing position with both values, because
"sample 7 differs" alone sends a reader back to a debugger.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch


@dataclass(frozen=True)
class Hazard:
    """One kind of aliasing (docs/dataset.md, Hazards): ``key`` shares storage with ``other``, a key
    of the same sample (``by_reference`` False) or of a sample served earlier (True); ``where`` is
    the first occurrence."""

    key: str
    other: str
    by_reference: bool
    where: str

    @property
    def kind(self) -> str:
        if self.by_reference:
            return f"{self.key} is handed out by reference: it shares storage with an earlier sample's {self.other}"
        return f"{self.other} and {self.key} share storage"

    @property
    def short(self) -> str:
        """A table cell: ``labels=tokens`` for two keys, ``position_ids(ref)`` for a cached tensor."""
        return f"{self.key}(ref)" if self.by_reference else f"{self.other}={self.key}"

    def __str__(self) -> str:
        return f"{self.kind} ({self.where})"


def refuses_writes(tensor: torch.Tensor) -> bool:
    """Whether an in-place write to ``tensor`` raises, as it does outside inference mode for a tensor made
    under ``torch.inference_mode()``: tried, with the tensor's own values, so nothing changes either way."""
    try:
        tensor.copy_(tensor)
    except RuntimeError:
        return True
    return False


def aliasing_hazards(samples: list[tuple[Any, Mapping[str, torch.Tensor]]]) -> list[Hazard]:
    """What aliases what among served samples ``(idx, sample)``, in served order: two keys of one
    sample sharing storage, or a tensor sharing storage with one served earlier (a cached tensor
    handed out by reference). One hazard per kind, at its first occurrence. A shared tensor that
    refuses writes (:func:`refuses_writes`) is no hazard: no consumer can change what the others see
    through it (docs/dataset.md, Shared masks)."""
    found: dict[str, Hazard] = {}
    seen: dict[int, tuple[Any, str]] = {}
    for call, (idx, sample) in enumerate(samples, start=1):
        storages: dict[int, str] = {}
        for key in sorted(sample):
            tensor = sample[key]
            if not isinstance(tensor, torch.Tensor) or tensor.numel() == 0:
                continue
            pointer = tensor.untyped_storage().data_ptr()
            if (pointer in storages or pointer in seen) and refuses_writes(tensor):
                hazard = None
            elif pointer in storages:
                hazard = Hazard(key, storages[pointer], False, f"dataset[{idx}], call {call}")
            elif pointer in seen:
                earlier_idx, earlier_key = seen[pointer]
                hazard = Hazard(key, earlier_key, True, f"dataset[{idx}] with dataset[{earlier_idx}], call {call}")
            else:
                hazard = None
            if hazard is not None:
                found.setdefault(hazard.kind, hazard)
            storages.setdefault(pointer, key)
        for pointer, key in storages.items():
            seen.setdefault(pointer, (idx, key))
    return list(found.values())


def last_sample_position(dataset) -> int:
    """The index ``k`` at which ``dataset[k]`` serves the last sample: the padded one, in a split that keeps it."""
    return int(np.flatnonzero(np.asarray(dataset.shuffle_index) == len(dataset) - 1)[0])


def first_difference(out: torch.Tensor, ref: torch.Tensor) -> tuple[int, ...] | None:
    """The first index (row-major) where two same-shaped tensors differ, or None when they are equal."""
    differing = torch.nonzero(out != ref)
    if len(differing) == 0:
        return None
    return tuple(int(i) for i in differing[0])


def differing_positions(out: Mapping[str, torch.Tensor], ref: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Per key of the reference sample ``ref``: where ``out`` differs from it (booleans of the
    reference's shape). A key that is missing, or of another dtype or shape, differs everywhere."""
    positions = {}
    for key, want in ref.items():
        got = out.get(key)
        comparable = isinstance(got, torch.Tensor) and got.dtype == want.dtype and got.shape == want.shape
        positions[key] = got != want if comparable else torch.ones_like(want, dtype=torch.bool)
    return positions


def sample_difference(out: Mapping[str, torch.Tensor], ref: Mapping[str, torch.Tensor]) -> str | None:
    """How ``out`` differs from the reference sample ``ref`` (keys, dtype, shape, first value), or None."""
    if set(out) != set(ref):
        return f"keys {sorted(out)} != reference keys {sorted(ref)}"
    for key in sorted(ref):
        got, want = out[key], ref[key]
        if not isinstance(got, torch.Tensor):
            return f"{key} is a {type(got).__name__}, not a torch.Tensor"
        if got.dtype != want.dtype:
            return f"{key} has dtype {got.dtype}, reference {want.dtype}"
        if got.shape != want.shape:
            return f"{key} has shape {tuple(got.shape)}, reference {tuple(want.shape)}"
        position = first_difference(got, want)
        if position is not None:
            count = int((got != want).sum())
            return (
                f"{key} differs at {count} position(s), first at {position}: "
                f"got {got[position].item()}, reference {want[position].item()}"
            )
    return None


def assert_samples_equal(out: Mapping[str, torch.Tensor], ref: Mapping[str, torch.Tensor], context: str) -> None:
    """AssertionError unless ``out`` equals the reference sample ``ref`` bit for bit.

    ``context`` says which sample this is (e.g. ``"dataset[3] (served 2nd)"``) for the message.
    """
    difference = sample_difference(out, ref)
    if difference is not None:
        raise AssertionError(f"{context}: {difference}")
