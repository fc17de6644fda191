"""The dataset properties as plain check functions of ``(factory, case, ...)``.

Written once; the property table (parity/table/rows/) gives them their strategies, the
upstream triggers as explicit examples and the known bugs they must catch, and the suite, the
known-bug checks, bench and the report all run them from there. Each raises AssertionError (naming
the sample, key and first differing position) on a counterexample. Target code is called
through :func:`parity.safety.crash.call_target`, so an exception the target raises is a
:class:`~parity.safety.crash.TargetCrashed` ("the target raised ..."), never mistaken for a counterexample,
and a config the target declines skips the example.
"""

from __future__ import annotations

import numpy as np
import torch
from hypothesis import reject
from torch.utils.data import DataLoader, default_collate

from oracle.gpt_dataset import OracleGPTDataset
from parity.cases import DatasetCase
from parity.contracts import checked_dataset
from parity.dataset.compare import Hazard, aliasing_hazards, assert_samples_equal, last_sample_position, refuses_writes
from parity.dataset.files import written
from parity.safety.crash import call_target
from parity.safety.parent_death import dataloader_workers_die_with_this_process
from parity.targets import ConfigDeclined

#: The index arrays every dataset target has, and the one only some have (held to the oracle too).
INDEX_ARRAYS = ("document_index", "shuffle_index")
OPTIONAL_INDEX_ARRAYS = ("sample_index",)


def make(factory, case: DatasetCase):
    """A fresh target instance; a declined config skips the example (docs/dataset.md, Declining).
    A case ``on_disk`` hands the target its documents also written to ``.bin``/``.idx`` files
    (docs/dataset.md, Files)."""
    documents = written(case.documents, case.config.vocab_size) if case.on_disk else list(case.documents)
    try:
        dataset = call_target("building the dataset", factory, documents, case.config)
    except ConfigDeclined:
        reject()
    return checked_dataset(dataset)


def serve(dataset, idx):
    return call_target(f"serving dataset[{idx}]", dataset.__getitem__, idx)


def build(factory, case: DatasetCase):
    """A fresh target instance and the oracle (which builds its own indices)."""
    dataset = make(factory, case)
    return dataset, OracleGPTDataset(case.documents, case.config)


def serve_plan(dataset, case: DatasetCase) -> list[int | None]:
    """The drawn order (which fills the cache), then every position once."""
    first = []
    if case.last_sample_first:
        first = [last_sample_position(dataset)]
    return first + list(case.serve_order) + list(range(len(dataset)))


def served(idx: int | None, call: int) -> str:
    return f"dataset[{idx}] (call {call} on a fresh instance)"


def check_matches_oracle(factory, case: DatasetCase) -> None:
    """Property 1: in any serve order, every sample equals the oracle's, bit for bit."""
    dataset, oracle = build(factory, case)
    assert len(dataset) == len(oracle), f"len(dataset) = {len(dataset)}, oracle {len(oracle)}"
    for call, idx in enumerate(serve_plan(dataset, case), start=1):
        assert_samples_equal(serve(dataset, idx), oracle[idx], served(idx, call))


def check_resume_agrees(factory, resumed: tuple[DatasetCase, int]) -> None:
    """Property 2: a run resumed at ``resume_at`` serves what a run from 0 served, index by index.

    ``resumed`` is ``(case, resume_at)``, drawn together because the start depends on the case.
    Each sample is copied when served, so what is compared is what the consumer saw at the time.
    """
    case, resume_at = resumed
    fresh = make(factory, case)
    resumed = make(factory, case)
    n = len(fresh)
    seen_fresh = [_snapshot(serve(fresh, k)) for k in range(n)]
    for k in [*range(resume_at, n), *range(resume_at)]:
        assert_samples_equal(
            serve(resumed, k), seen_fresh[k], f"dataset[{k}] of a run resumed at {resume_at} vs a run from 0"
        )


def edit_in_place(tensor: torch.Tensor, edit: str) -> None:
    """Change every element of ``tensor`` in place, as a careless consumer of a batch might."""
    if tensor.dtype == torch.bool:
        tensor.logical_not_()
    elif edit == "add_one":
        tensor.add_(1)
    elif edit == "fill_invalid":
        tensor.fill_(-7)  # no key can legitimately hold -7
    else:
        raise ValueError(f"edit must be 'add_one' or 'fill_invalid', got {edit!r}")


def check_edits_do_not_leak(factory, case: DatasetCase, edit: str) -> None:
    """Property 3: editing any returned tensor in place changes neither its sibling keys nor any
    later sample (so no returned tensor aliases the cache, another sample or another key). A tensor
    that refuses the edit (shared and write-protected, docs/dataset.md, Shared masks) is not edited:
    the consumer's edit raises, and nothing leaks."""
    dataset, oracle = build(factory, case)
    for call, idx in enumerate(serve_plan(dataset, case), start=1):
        sample, expected = serve(dataset, idx), oracle[idx]
        assert_samples_equal(sample, expected, served(idx, call))
        keys = sorted(sample)
        for number, key in enumerate(keys):
            if refuses_writes(sample[key]):  # shared and write-protected: the edit raises, nothing can leak
                continue
            edit_in_place(sample[key], edit)
            untouched = keys[number + 1 :]
            assert_samples_equal(
                {k: sample[k] for k in untouched},
                {k: expected[k] for k in untouched},
                f"{served(idx, call)} after {edit} on its {key}",
            )


def check_dataloader_matches_oracle(factory, case: DatasetCase, batch_size: int) -> None:
    """Property 4: after the drawn serves in the main process, a two-worker DataLoader (each
    worker forks its own copy of the dataset and its cache) yields exactly the oracle's batches."""
    dataset, oracle = build(factory, case)
    for call, idx in enumerate(case.serve_order, start=1):
        assert_samples_equal(serve(dataset, idx), oracle[idx], served(idx, call))
    loader = DataLoader(dataset, batch_size=batch_size, num_workers=2,
                        worker_init_fn=dataloader_workers_die_with_this_process())
    positions = list(range(len(oracle)))
    expected = [
        default_collate([oracle[k] for k in positions[start : start + batch_size]])
        for start in range(0, len(positions), batch_size)
    ]
    batches = call_target("iterating a two-worker DataLoader", list, loader)
    assert len(batches) == len(expected), f"{len(batches)} batches, oracle {len(expected)}"
    for number, (batch, want) in enumerate(zip(batches, expected, strict=True)):
        assert_samples_equal(batch, want, f"batch {number} (batch_size={batch_size}, 2 workers)")


def find_aliasing_hazards(factory, case: DatasetCase) -> list[Hazard]:
    """What aliases what among the served samples (docs/dataset.md, Hazards)."""
    dataset = make(factory, case)
    return aliasing_hazards([(idx, serve(dataset, idx)) for idx in serve_plan(dataset, case)])


def check_aliasing_hazards(factory, case: DatasetCase, target=None) -> list[str]:
    """The hazard check: no returned tensor shares storage with another key or an earlier sample.
    Required of a target that promises copies; for the others each kind of hazard is returned as a
    note (a warning beside a passing verdict), once per kind rather than once per sample."""
    hazards = find_aliasing_hazards(factory, case)
    if target is None or target.promises_copies:
        name = "the target" if target is None else target.name
        assert not hazards, f"{name} promises copies, but: " + "; ".join(map(str, hazards))
        return []
    return [hazard.kind for hazard in hazards]


def check_indices_match_oracle(factory, case: DatasetCase) -> None:
    """Property 5: the target's index arrays equal the reference builder's (megatron-core's
    algorithm and seeding) bit for bit: ``document_index``, ``shuffle_index``, and ``sample_index``
    where the target has one; the same seed gives the same arrays again."""
    dataset = make(factory, case)
    oracle = OracleGPTDataset(case.documents, case.config)
    arrays = [*INDEX_ARRAYS, *(name for name in OPTIONAL_INDEX_ARRAYS if hasattr(dataset, name))]
    for name in arrays:
        got, want = np.asarray(getattr(dataset, name)), oracle.indices[name]
        assert np.issubdtype(got.dtype, np.integer), f"{name} has dtype {got.dtype}, not an integer type"
        assert got.shape == want.shape, (
            f"{name} has shape {got.shape}, reference {want.shape} (reference: {oracle.indices['num_epochs']} "
            f"epoch(s), final epoch shuffled separately: {bool(oracle.indices['separate_final_epoch'])})"
        )
        differing = np.flatnonzero((got != want).reshape(len(got), -1).any(axis=1))
        assert not differing.size, (
            f"{name} differs from the reference at {differing.size} row(s), first at {differing[0]}: "
            f"got {got[differing[0]].tolist()}, reference {want[differing[0]].tolist()}"
        )
    assert len(dataset) == len(oracle), f"len(dataset) = {len(dataset)}, reference {len(oracle)}"
    again = make(factory, case)
    for name in arrays:
        assert np.array_equal(np.asarray(getattr(again, name)), np.asarray(getattr(dataset, name))), (
            f"same seed, different {name}"
        )


def _snapshot(sample: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {key: tensor.clone() for key, tensor in sample.items()}
