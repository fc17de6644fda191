"""Bad input: the contract every dataset target keeps, and impl's own exact messages.

* The harness's config (``parity.dataset_config``) rejects a bad field with a ValueError naming it;
  that is the harness's code, checked whatever the target.
* The bad input itself is declared once (parity/strategies/bad_input.py) and held by the table's ``validation/*``
  properties, for every target and in the report's ``validation`` scenario: an index past the end raises
  IndexError (docs/dataset.md, Bad input), and a target that validates its input as impl does refuses unusable
  documents with a ValueError, a negative index with IndexError, an index that is not an int with TypeError.
* impl's own words for each are pinned here, only for ``--parity-target impl``: other targets are free to word
  their errors differently.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from parity.dataset_config import GPTDatasetConfig
from parity.strategies.bad_input import BAD_DOCUMENTS, BAD_INDICES, VALID_CONFIG, VALID_DOCUMENTS

VALID = dict(sequence_length=4, vocab_size=10, eod_id=0)


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


#: impl's own words for each declared unusable set of documents (parity/strategies/bad_input.py); the table's
#: ``validation/dataset-documents`` holds every target that validates its input to the ValueError.
DOCUMENT_MESSAGES = {
    "no document": "at least one document",
    "every document empty": "not all be empty",
    "a 2-D document": "1-D",
    "float token ids": "integer token ids",
    "a token id equal to vocab_size": r"token ids in \[0, vocab_size=10\); document 0 holds 10",
    "a negative token id": r"token ids in \[0, vocab_size=10\); document 0 holds -1",
    "too few tokens for one sample": "need at least 1",  # 3 tokens cannot fill 4 + 1
}


@pytest.mark.parametrize("bad", list(BAD_DOCUMENTS))
def test_impl_names_what_is_wrong_with_the_documents(impl_factory, bad):
    with pytest.raises(ValueError, match=rf"^documents .*{DOCUMENT_MESSAGES[bad]}"):
        impl_factory(list(BAD_DOCUMENTS[bad]), VALID_CONFIG)


def test_impl_rejects_num_samples_beyond_what_num_epochs_supply(impl_factory):
    # 10 tokens a epoch: (10 - 1) // 4 = 2 samples from one epoch, (20 - 1) // 4 = 4 from two.
    with pytest.raises(ValueError, match=r"^documents .*2 epoch\(s\) supply 4 samples.*need at least 5"):
        impl_factory(list(VALID_DOCUMENTS), replace(VALID_CONFIG, num_epochs=2, num_samples=5))


@pytest.mark.parametrize("bad", list(BAD_INDICES))
def test_impl_names_what_is_wrong_with_an_index(impl_factory, bad):
    """The table's ``validation/dataset-indices`` holds every target to IndexError past the end (iteration and
    samplers stop there), and a target that validates its input to the rest; here impl's own words."""
    declared = BAD_INDICES[bad]
    dataset = impl_factory(list(VALID_DOCUMENTS), VALID_CONFIG)
    message = r"^dataset index -?\d+ out of range \[0, 2\)" if declared.raises is IndexError else (
        "^dataset index must be an int or None")
    with pytest.raises(declared.raises, match=message):
        dataset[declared.index]
