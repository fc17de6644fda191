"""The dataset properties as plain check functions of ``(factory, case, ...)``.

Written once and applied twice: ``test_properties.py`` runs them under ``@given`` against the
selected target, and ``tests/quality`` runs them against the known-bug targets to prove they find
the bugs. Each raises AssertionError (naming the sample, key and first differing position) on a
counterexample.
"""

from __future__ import annotations

import numpy as np
import torch
from torch.utils.data import DataLoader, default_collate

from oracle.gpt_dataset import (
    OracleGPTDataset,
    drops_last_partial,
    expected_num_epochs,
    expected_sample_count,
    extra_tokens,
)
from parity.dataset_compare import assert_samples_equal, last_sample_position
from tests.dataset.strategies import DatasetCase, tokens_per_epoch


def build(factory, case: DatasetCase):
    """A fresh target instance and the oracle that reads the same index arrays."""
    dataset = factory(list(case.documents), case.config)
    oracle = OracleGPTDataset(case.documents, case.config, dataset.document_index, dataset.shuffle_index)
    return dataset, oracle


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
        assert_samples_equal(dataset[idx], oracle[idx], served(idx, call))


def check_resume_agrees(factory, case: DatasetCase, resume_at: int) -> None:
    """Property 2: a run resumed at ``resume_at`` serves what a run from 0 served, index by index.

    Each sample is copied when served, so what is compared is what the consumer saw at the time.
    """
    fresh = factory(list(case.documents), case.config)
    resumed = factory(list(case.documents), case.config)
    n = len(fresh)
    seen_fresh = [_snapshot(fresh[k]) for k in range(n)]
    for k in [*range(resume_at, n), *range(resume_at)]:
        assert_samples_equal(
            resumed[k], seen_fresh[k], f"dataset[{k}] of a run resumed at {resume_at} vs a run from 0"
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
    later sample (so no returned tensor aliases the cache, another sample or another key)."""
    dataset, oracle = build(factory, case)
    for call, idx in enumerate(serve_plan(dataset, case), start=1):
        sample, expected = dataset[idx], oracle[idx]
        assert_samples_equal(sample, expected, served(idx, call))
        keys = sorted(sample)
        for number, key in enumerate(keys):
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
        assert_samples_equal(dataset[idx], oracle[idx], served(idx, call))
    loader = DataLoader(dataset, batch_size=batch_size, num_workers=2)
    positions = list(range(len(oracle)))
    expected = [
        default_collate([oracle[k] for k in positions[start : start + batch_size]])
        for start in range(0, len(positions), batch_size)
    ]
    batches = list(loader)
    assert len(batches) == len(expected), f"{len(batches)} batches, oracle {len(expected)}"
    for number, (batch, want) in enumerate(zip(batches, expected, strict=True)):
        assert_samples_equal(batch, want, f"batch {number} (batch_size={batch_size}, 2 workers)")


def check_index_sanity(factory, case: DatasetCase) -> None:
    """Property 5: every document appears once per epoch, the shuffle is a permutation, the sample
    count follows the SPEC formula, and the same seed gives the same indices."""
    config = case.config
    dataset = factory(list(case.documents), config)
    tokens = tokens_per_epoch(case.documents)
    epochs = expected_num_epochs(tokens, config)
    document_index = np.asarray(dataset.document_index)
    shuffle_index = np.asarray(dataset.shuffle_index)
    assert np.issubdtype(document_index.dtype, np.integer), f"document_index dtype {document_index.dtype}"
    assert np.issubdtype(shuffle_index.dtype, np.integer), f"shuffle_index dtype {shuffle_index.dtype}"

    appearances = np.bincount(document_index, minlength=len(case.documents))
    assert len(document_index) == epochs * len(case.documents) and np.all(appearances == epochs), (
        f"expected each of {len(case.documents)} documents {epochs} time(s), got counts {appearances.tolist()}"
    )
    count = expected_sample_count(epochs * tokens, config.sequence_length, extra_tokens(config), drops_last_partial(config))
    assert len(dataset) == count, f"len(dataset) = {len(dataset)}, SPEC formula {count}"
    assert len(shuffle_index) == count, f"len(shuffle_index) = {len(shuffle_index)}, expected {count}"
    assert np.array_equal(np.sort(shuffle_index), np.arange(count)), "shuffle_index is not a permutation"
    if config.num_samples is not None:
        assert count >= config.num_samples, f"{count} samples, fewer than num_samples={config.num_samples}"

    again = factory(list(case.documents), config)
    assert np.array_equal(again.document_index, document_index), "same seed, different document_index"
    assert np.array_equal(again.shuffle_index, shuffle_index), "same seed, different shuffle_index"


def _snapshot(sample: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {key: tensor.clone() for key, tensor in sample.items()}
