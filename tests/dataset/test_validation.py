"""Bad input: the contract every dataset target keeps, and impl's own exact messages.

* The harness's config (``parity.dataset_config``) rejects a bad field with a ValueError naming it;
  that is the harness's code, checked whatever the target.
* The contract every target keeps (docs/dataset.md, Bad input): an index past the end raises
  IndexError, as any Python sequence does, so iteration and DataLoader samplers stop cleanly.
* impl's own promises (early ValueErrors naming ``documents``, IndexError for negative indices,
  TypeError for a non-integer index) are pinned only for ``--parity-target impl``: other targets are free
  to word or type their errors differently.
"""

from __future__ import annotations

import numpy as np
import pytest

from parity.dataset_config import GPTDatasetConfig

VALID = dict(sequence_length=4, vocab_size=10, eod_id=0)
DOCUMENTS = [np.array([1, 2, 3, 4, 5, 0]), np.array([6, 7, 8, 0])]


@pytest.mark.parametrize(
    ("override", "field"),
    [
        ({"sequence_length": 0}, "sequence_length"),
        ({"vocab_size": 0}, "vocab_size"),
        ({"eod_id": 10}, "eod_id"),
        ({"eod_id": -1}, "eod_id"),
        ({"pad_id": 10}, "pad_id"),
        ({"pad_id": -2}, "pad_id"),
        ({"pad_id": 0}, "pad_id"),  # equal to the EOD id
        ({"split": "validation"}, "split"),
        ({"random_seed": -1}, "random_seed"),
        ({"random_seed": 2**32}, "random_seed"),
        ({"num_epochs": 0}, "num_epochs"),
        ({"num_samples": 0}, "num_samples"),
    ],
)
def test_a_bad_config_field_is_named(override, field):
    with pytest.raises(ValueError, match=rf"^{field} must"):
        GPTDatasetConfig(**{**VALID, **override})


def test_an_in_vocabulary_pad_id_is_allowed():
    assert GPTDatasetConfig(**VALID, pad_id=3).pad_id == 3


@pytest.fixture
def impl_factory(target, dataset_factory):
    if target.name != "impl":
        pytest.skip(f"pins impl's own error messages; {target.name} keeps only the generic contract")
    return dataset_factory


@pytest.mark.parametrize(
    ("documents", "problem"),
    [
        ([], "at least one document"),
        ([np.array([], dtype=np.int64), np.array([], dtype=np.int64)], "not all be empty"),
        ([np.array([[1, 2], [3, 0]])], "1-D"),
        ([np.array([1.0, 2.0, 0.0])], "integer token ids"),
        ([np.array([1, 2, 10, 0])], r"token ids in \[0, vocab_size=10\)"),
        ([np.array([1, -1, 0])], r"token ids in \[0, vocab_size=10\)"),
        ([np.array([1, 2, 0])], "need at least 1"),  # 3 tokens cannot fill 4 + 1
    ],
)
def test_impl_rejects_documents_a_sample_cannot_use(impl_factory, documents, problem):
    with pytest.raises(ValueError, match=rf"^documents .*{problem}"):
        impl_factory(documents, GPTDatasetConfig(**VALID))


def test_impl_rejects_num_samples_beyond_what_num_epochs_supply(impl_factory):
    # 10 tokens a epoch: (10 - 1) // 4 = 2 samples from one epoch, (20 - 1) // 4 = 4 from two.
    with pytest.raises(ValueError, match=r"^documents .*2 epoch\(s\) supply 4 samples.*need at least 5"):
        impl_factory(DOCUMENTS, GPTDatasetConfig(**VALID, num_epochs=2, num_samples=5))


@pytest.mark.parametrize("idx", [2, 3, 10**9])
def test_every_target_raises_index_error_past_the_end(dataset_factory, idx):
    """The generic contract: ``len`` is the oracle's, and ``dataset[len(dataset)]`` and beyond raise
    IndexError (so ``iter(dataset)`` and samplers stop)."""
    dataset = dataset_factory(DOCUMENTS, GPTDatasetConfig(**VALID))
    assert len(dataset) == 2
    with pytest.raises(IndexError):
        dataset[idx]
    assert len(list(iter(dataset))) == 2  # the old sequence protocol stops at the IndexError


@pytest.mark.parametrize("idx", [-1, -3])
def test_impl_rejects_a_negative_index(impl_factory, idx):
    dataset = impl_factory(DOCUMENTS, GPTDatasetConfig(**VALID))
    with pytest.raises(IndexError, match=r"^dataset index -\d+ out of range \[0, 2\)"):
        dataset[idx]


@pytest.mark.parametrize("idx", ["0", 1.0, True])
def test_impl_rejects_an_index_that_is_not_an_int(impl_factory, idx):
    dataset = impl_factory(DOCUMENTS, GPTDatasetConfig(**VALID))
    with pytest.raises(TypeError, match="^dataset index must be an int or None"):
        dataset[idx]
