"""Bitwise comparison of dataset samples (SPEC §6): same keys, dtypes, shapes and values.

A failure names the sample, the key and the first differing position with both values, because
"sample 7 differs" alone sends a reader back to a debugger.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import torch


def last_sample_position(dataset) -> int:
    """The index ``k`` at which ``dataset[k]`` serves the last sample: the padded one, in a split that keeps it."""
    return int(np.flatnonzero(np.asarray(dataset.shuffle_index) == len(dataset) - 1)[0])


def first_difference(out: torch.Tensor, ref: torch.Tensor) -> tuple[int, ...] | None:
    """The first index (row-major) where two same-shaped tensors differ, or None when they are equal."""
    differing = torch.nonzero(out != ref)
    if len(differing) == 0:
        return None
    return tuple(int(i) for i in differing[0])


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
