"""Hypothesis strategies for the dataset properties: documents, config and serve order.

Shapes, rates and a seed are drawn; the token arrays are then built by a numpy Generator from the
seed, so a case shrinks through a handful of integers rather than thousands of token draws. Cases
stay small (a few documents, sequences of at most 24 tokens) so the oracle's loops stay cheap.

The corners of docs/dataset.md, each an explicit example in the default run, are
:mod:`parity.strategies.dataset_corners`. The random search labels what it reached with
``hypothesis.event`` (``pytest --hypothesis-show-statistics``). The config type is the harness's
(:mod:`parity.dataset_config`); the dataset under test always comes from the ``dataset_factory``
fixture, never from here.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from hypothesis import assume, event
from hypothesis import strategies as st

from oracle.gpt_indices import (
    sample_count,
    samples_before_final_epoch,
)
from parity.cases import DatasetCase, samples_supplied
from parity.dataset_config import SPLITS, GPTDatasetConfig
from parity.strategies.covering import labels
from parity.strategies.dataset_corners import corner_cases, final_epoch_threshold, realized_switches
from parity.strategies.mock_data import mock_documents

SEEDS = st.integers(0, 2**32 - 1)
#: Rates at which EOD ids are planted in a document (besides chance); the first shrinks first.
EOD_RATES = st.sampled_from((0.0, 0.1, 0.4))
#: An in-vocabulary pad id is always planted too: occurring in the data is what makes it matter.
PAD_RATES = st.sampled_from((0.3, 0.1, 0.5))
NO_RESETS = (False, False, False)
_SOME_RESETS = tuple((p, a, e) for p in (False, True) for a in (False, True) for e in (False, True) if p or a or e)
#: The three flags that switch the cache off: all False (the cached path) three times in four,
#: each of the seven other combinations once in 28.
RESET_FLAGS = st.sampled_from((NO_RESETS,) * 21 + _SOME_RESETS)
#: How the token total relates to the sample boundaries: anywhere, or exactly on one.
BOUNDARIES = st.sampled_from(("any", "exact"))
#: ``num_samples``: none, exactly what one or more whole epochs supply (on an exact boundary, the
#: tokens reach ``num_samples * L + extra`` exactly; a valid split keeping its partial sample counts it, which
#: takes one more epoch: twice as often, since one case in six keeps it), a final epoch within one sample of the
#: threshold that shuffles it apart, or any count up to several epochs.
NUM_SAMPLES_KINDS = st.sampled_from(("none", "whole epochs", "any", "near the final epoch's threshold", "whole epochs"))


def dataset_cases(
    max_documents: int = 6, max_document_length: int = 60, max_sequence_length: int = 24, max_epochs: int = 3
) -> st.SearchStrategy[DatasetCase]:
    """A valid dataset (it supplies at least one sample) plus a serve order for a fresh instance.

    The strategies with fixed bounds are built here, once, rather than on every draw: building
    strategies inside a draw made generation cost ten times more than running the check.
    """
    lengths = st.lists(
        st.one_of(st.integers(0, 2), st.integers(0, max_document_length)), min_size=1, max_size=max_documents
    )
    # num_epochs is not a megatron-core setting (such a target declines it): None three times in four.
    num_epochs = st.sampled_from((None,) * 3 * max_epochs + tuple(range(1, max_epochs + 1)))
    return _dataset_cases(lengths, num_epochs, max_sequence_length, max_epochs)


@st.composite
def _dataset_cases(draw, lengths, num_epochs, max_sequence_length: int, max_epochs: int) -> DatasetCase:
    vocab_size = draw(st.integers(2, 40))
    eod_id = draw(st.integers(0, vocab_size - 1))
    pad_id = -1  # out of vocabulary, or (five times in six) any in-vocabulary id except the EOD:
    if draw(st.sampled_from((True,) * 5 + (False,))):
        pad_id = draw(st.integers(0, vocab_size - 2))
        pad_id += pad_id >= eod_id
    add_extra_token = draw(st.sampled_from((True, False)))  # upstream's default first
    extra = int(add_extra_token)
    split = draw(st.sampled_from(SPLITS))
    drop_last_partial = draw(st.booleans())  # drawn for every split; only valid reads it
    keep_partial = split == "valid" and not drop_last_partial

    lengths = draw(lengths)
    # A sample needs one token beyond the ``extra`` it shares with its successor; a few more make
    # room for several samples (a kept partial sample may still be all there is).
    lengths[-1] += max(0, extra + (1 if keep_partial else 4) - sum(lengths))
    tokens = sum(lengths)
    # Dropping the partial sample needs one whole window per epoch; keeping it needs one token.
    longest = max_sequence_length if keep_partial else min(max_sequence_length, tokens - extra)
    # Three times in four, at least two samples per epoch, so that one can leak into another.
    if draw(st.sampled_from((True, True, True, False))):
        longest = max(1, min(longest, (tokens - extra) // 2))
    # Drawn down from the longest, so that the simplest cases already hold a few tokens per sample.
    sequence_length = longest - draw(st.integers(0, longest - 1))
    if draw(BOUNDARIES) == "exact":  # lengthen the last document so the total ends on a boundary
        lengths[-1] += -(tokens - extra) % sequence_length
        tokens = sum(lengths)
    docs = _draw_documents(draw, lengths, vocab_size, eod_id, pad_id)

    reset_position_ids, reset_attention_mask, eod_mask_loss = draw(RESET_FLAGS)
    config_fields = dict(
        sequence_length=sequence_length,
        vocab_size=vocab_size,
        eod_id=eod_id,
        pad_id=pad_id,
        add_extra_token=add_extra_token,
        reset_position_ids=reset_position_ids,
        reset_attention_mask=reset_attention_mask,
        eod_mask_loss=eod_mask_loss,
        create_attention_mask=draw(st.booleans()),
        split=split,
        drop_last_partial_validation_sequence=drop_last_partial,
        random_seed=draw(SEEDS),
        num_epochs=draw(num_epochs),
    )
    config = GPTDatasetConfig(**config_fields)
    per_epoch = samples_supplied(config, tokens) if config.num_epochs is None else None
    kind = draw(NUM_SAMPLES_KINDS)
    num_samples = None
    if config.num_epochs is not None:  # at most what the given epochs supply
        if kind != "none":
            num_samples = draw(st.integers(1, sample_count(config.num_epochs * tokens, config)))
    elif kind == "whole epochs":
        num_samples = samples_supplied(config, draw(st.integers(1, max_epochs)) * tokens)
    elif kind == "near the final epoch's threshold":  # the final epoch of two or more, one sample either side
        before = samples_before_final_epoch(tokens, draw(st.integers(2, max(2, max_epochs))), config)
        num_samples = max(1, before + final_epoch_threshold(tokens, config) + draw(st.integers(-1, 1)))
    elif kind == "any":
        num_samples = draw(st.integers(1, max(1, max_epochs * per_epoch)))
    config = GPTDatasetConfig(**config_fields, num_samples=num_samples)
    length = samples_supplied(config, tokens)
    # -1 stands for None (a batch-padding sample).
    positions = draw(st.lists(st.integers(-1, length - 1), max_size=6))
    serve_order = tuple(None if position == -1 else position for position in positions)
    case = DatasetCase(docs, config, serve_order, draw(st.booleans()))
    for label in labels(realized_switches(case)):
        event(label)
    return case


def _draw_documents(draw, lengths, vocab_size: int, eod_id: int, pad_id: int):
    """Documents of the given lengths (0, 1 and longer than a sample included), each different,
    with planted EODs and pads."""
    eod_rate = draw(EOD_RATES)
    pad_rate = draw(PAD_RATES) if pad_id >= 0 else 0.0
    ends_with_eod = draw(st.booleans())
    rng = np.random.default_rng(draw(SEEDS))
    built = []
    for length in lengths:
        document = rng.integers(0, vocab_size, size=length, dtype=np.int64)
        document[rng.random(length) < eod_rate] = eod_id
        if pad_rate:
            document[rng.random(length) < pad_rate] = pad_id
        if ends_with_eod and length:
            document[-1] = eod_id
        built.append(document)
    return tuple(built)


@st.composite
def resumed_cases(draw):
    """A case plus the shuffle position a resumed run starts from: drawn down from the last one,
    since resuming at 0 is no resume at all."""
    case = draw(dataset_cases())
    return case, case.length - 1 - draw(st.integers(0, case.length - 1))


#: In-place edits a consumer might make to a returned tensor; each changes every element.
EDITS = ("add_one", "fill_invalid")

#: Cases for the DataLoader property: small, since each example forks two worker processes.
small_dataset_cases = dataset_cases(max_documents=3, max_document_length=30, max_sequence_length=12, max_epochs=2)


# The upstream pull request's own reproduction: a valid split that keeps its padded last sample,
# which is served first (filling the cache with its padding), then index 0 is compared.
UPSTREAM_PR_CASE = DatasetCase(
    documents=(
        np.array([3, 4, 5, 6, 0], dtype=np.int64),
        np.array([7, 8, 9, 1, 2, 3, 0], dtype=np.int64),
        np.array([4, 5, 6, 7, 8, 9, 1, 2, 0], dtype=np.int64),
    ),
    config=GPTDatasetConfig(
        sequence_length=8, vocab_size=10, eod_id=0, split="valid", drop_last_partial_validation_sequence=False
    ),
    serve_order=(0,),
    last_sample_first=True,
)

# Upstream's mock data with an in-vocabulary pad id: the pad occurs inside almost every sample.
MOCK_DATA_CASE = DatasetCase(
    documents=tuple(mock_documents(num_documents=6, vocab_size=64, eod_id=0, seed=0, max_length=200)),
    config=GPTDatasetConfig(sequence_length=32, vocab_size=64, eod_id=0, pad_id=7),
    serve_order=(0, 1),
)

EXPLICIT_CASES = {"upstream-pr": UPSTREAM_PR_CASE, "mock-data-in-vocab-pad": MOCK_DATA_CASE}

# A sample split into documents by reset_attention_mask, the pad id ordinary data: [0, 2, 2] is two documents
# (after the EOD), so the causal-LM row fed from it holds two (docs/causal-lm.md, The dataset feeds the run). A
# nightly search found it: served unpacked, the two documents attended across each other, a false alarm on impl.
SPLIT_SAMPLE_CASE = DatasetCase(
    documents=(np.array([5, 1, 0, 2, 2], dtype=np.int64),),
    config=GPTDatasetConfig(sequence_length=2, vocab_size=7, eod_id=0, pad_id=1, add_extra_token=True,
                            reset_position_ids=True, reset_attention_mask=True, create_attention_mask=False,
                            drop_last_partial_validation_sequence=False, random_seed=0),
)

# megatron-core 0.16.1's index crash, as Hypothesis shrank it: a valid split keeps its partial
# sample, the extra token is on, and the shuffle puts the empty document last, so the walk that
# builds the sample index ends at offset 0 - 1 = -1 and megatron's own sanity check rejects it.
MEGATRON_CRASH_CASE = DatasetCase(
    documents=(np.array([], dtype=np.int64), np.array([1, 1], dtype=np.int64)),
    config=GPTDatasetConfig(
        sequence_length=2,
        vocab_size=2,
        eod_id=0,
        pad_id=1,
        create_attention_mask=False,
        split="valid",
        drop_last_partial_validation_sequence=False,
        random_seed=0,
    ),
)


@st.composite
def mock_cases(draw) -> DatasetCase:
    """A dataset of upstream's mock ramps (``MockGPTLowLevelDataset``'s documents, a few of them) with
    an in-vocabulary pad id that occurs in them (most draws), and a serve order.

    The vocabulary is at least as long as the longest ramp, so the ramps are the same on every
    megatron-core release (0.16 wraps them at the vocabulary size, 0.14 and 0.15 do not)."""
    max_length = draw(st.integers(2, 40))
    vocab_size = max_length + draw(st.integers(0, 8))
    eod_id = draw(st.sampled_from((0, vocab_size - 1)))
    pad_id = -1
    if draw(st.sampled_from((True, True, True, False))):
        pad_id = draw(st.integers(1, max(1, max_length - 2)))
        assume(pad_id != eod_id)
    documents = tuple(mock_documents(draw(st.integers(1, 6)), vocab_size, eod_id, draw(SEEDS), max_length))
    tokens = sum(len(document) for document in documents)
    add_extra_token = draw(st.booleans())
    split = draw(st.sampled_from(SPLITS))
    drop = draw(st.booleans())
    keep_partial = split == "valid" and not drop
    usable = tokens - int(add_extra_token)
    assume(usable >= 1)
    longest = max(1, min(24, usable if keep_partial else usable))
    sequence_length = longest - draw(st.integers(0, longest - 1))
    reset_position_ids, reset_attention_mask, eod_mask_loss = draw(RESET_FLAGS)
    config = GPTDatasetConfig(
        sequence_length=sequence_length, vocab_size=vocab_size, eod_id=eod_id, pad_id=pad_id,
        add_extra_token=add_extra_token, reset_position_ids=reset_position_ids,
        reset_attention_mask=reset_attention_mask, eod_mask_loss=eod_mask_loss,
        create_attention_mask=draw(st.booleans()), split=split, drop_last_partial_validation_sequence=drop,
        random_seed=draw(SEEDS),
    )
    assume(samples_supplied(config, tokens) >= 1)
    length = samples_supplied(config, tokens)
    positions = draw(st.lists(st.integers(-1, length - 1), max_size=4))
    return DatasetCase(documents, config, tuple(None if p == -1 else p for p in positions), draw(st.booleans()))


#: megatron's mock data as every release makes it (a vocabulary longer than the ramps, so that
#: 0.16's wrapping changes nothing): the in-vocabulary pad 7 sits in every document longer than 8.
MEGATRON_MOCK_CASE = DatasetCase(
    documents=tuple(mock_documents(num_documents=5, vocab_size=64, eod_id=0, seed=3, max_length=60)),
    config=GPTDatasetConfig(sequence_length=16, vocab_size=64, eod_id=0, pad_id=7, create_attention_mask=False),
    serve_order=(0, 1),
    last_sample_first=True,
)


def on_disk(case: DatasetCase) -> DatasetCase:
    """``case`` served from ``.bin``/``.idx`` files to a target that reads them (docs/dataset.md, Files)."""
    return replace(case, on_disk=True)


def file_cases() -> tuple[DatasetCase, ...]:
    """The explicit examples run through files: the upstream trigger and
    the first corners (which hold an empty and a one-token document)."""
    return (UPSTREAM_PR_CASE, *corner_cases()[:3])
