"""Hypothesis strategies for the dataset properties: documents, config and serve order.

Shapes, rates and a seed are drawn; the token arrays are then built by a numpy Generator from the
seed, so a case shrinks through a handful of integers rather than thousands of token draws. Cases
stay small (a few documents, sequences of at most 24 tokens) so the oracle's loops stay cheap.

The corners of docs/dataset.md are the values of :data:`SWITCHES`: the three mask switches
``reset_position_ids``, ``reset_attention_mask``, ``eod_mask_loss`` (all eight settings),
``create_attention_mask``, every split with either value of ``drop_last_partial_validation_sequence``
(train and test ignore it), the extra token, token totals anywhere, exactly on a sample boundary, or
exactly what ``num_samples`` asks for, one epoch or several (given, or derived from
``num_samples`` with and without a separately shuffled final epoch), in-vocabulary pads in the data,
empty and one-token documents, and what is served first. Every one is in the default run on
purpose: :func:`corner_cases` builds one explicit example per row of a covering array over them
(every value, every pair of values, all eight mask settings, every split with either flag, an exact
boundary with and without the extra token). The random search labels what it reached with
``hypothesis.event`` (``pytest --hypothesis-show-statistics``). The config type is the harness's
(:mod:`parity.dataset_config`); the dataset under test always comes from the ``dataset_factory``
fixture, never from here.
"""

from __future__ import annotations

import functools
from dataclasses import replace

import numpy as np
from hypothesis import assume, event
from hypothesis import strategies as st

from oracle.gpt_indices import (
    FINAL_EPOCH_THRESHOLD,
    extra_tokens,
    sample_count,
    samples_before_final_epoch,
    separate_final_epoch,
)
from oracle.gpt_indices import num_epochs as oracle_num_epochs
from parity.cases import DatasetCase, samples_supplied
from parity.dataset_config import SPLITS, GPTDatasetConfig
from parity.strategies.covering import Row, covering_array, every_combination, labels
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


# --- the corners, each in the default run on purpose -------------------------------------------------

MASK_SWITCHES = ("reset_position_ids", "reset_attention_mask", "eod_mask_loss")
#: The final epoch's samples one below, at and one above the threshold (``int(0.8 * samples per epoch)``) that
#: decides whether it is shuffled apart: the values of ``epochs`` an off-by-one of that decision shows in.
FINAL_EPOCH_CORNERS = {
    "several, final epoch one below the threshold": -1,
    "several, final epoch at the threshold": 0,
    "several, final epoch one above the threshold": 1,
}
#: The values of ``epochs`` whose num_samples is set from the threshold or the split's count, not from the total.
_NUM_SAMPLES_SET = (*FINAL_EPOCH_CORNERS, "several, though fewer supply num_samples with a partial sample")
#: The switches that are config fields of the same name.
CONFIG_SWITCHES = ("split", "drop_last_partial_validation_sequence", "add_extra_token", "create_attention_mask", *MASK_SWITCHES)
#: Every corner of docs/dataset.md, as the values of a switch; :func:`realized_switches` reads them off a case.
SWITCHES: dict[str, tuple] = {
    # How many epochs, and what decides it (num_epochs is a harness extension megatron-core declines): from
    # num_samples, the final epoch's samples against the threshold that shuffles it apart (docs/dataset.md,
    # Indices), two or more away from it, one below (apart), at or one above it (not apart); or the fewest epochs
    # by tokens, one more than the split's own count would take where a kept partial sample supplies num_samples.
    "epochs": ("one", "one, from num_samples", "num_epochs", "several, from num_samples", "several, final epoch apart",
               *FINAL_EPOCH_CORNERS, "several, though fewer supply num_samples with a partial sample"),
    # Where the token total of all epochs lands against the sample boundaries: anywhere, exactly on
    # one, one token short of one (the last sample lacks its final label), one token past one, or
    # exactly on ``num_samples * L + extra``.
    "total": ("anywhere", "on a sample boundary", "one token short", "one token past", "num_samples reached exactly"),
    "pad": ("in the data", "in vocabulary, absent", "out of vocabulary"),
    "documents": ("an empty one", "a one-token one", "none shorter than two"),
    # What a fresh instance serves first (what fills the cache).
    "served first": ("the last sample", "a batch-padding sample", "shuffle positions"),
    "split": SPLITS,
    "drop_last_partial_validation_sequence": (True, False),
    "add_extra_token": (True, False),
    "create_attention_mask": (True, False),
    **{name: (False, True) for name in MASK_SWITCHES},
}
#: Combinations the corner cases must hold beyond every pair: the mask switches act together, the
#: flag only matters on the valid split, and an exact boundary matters with and without the extra token.
#: How the stream can end against the sample boundaries (docs/dataset.md, Corners).
ENDS = ("on a sample boundary", "one token short", "one token past")
REQUIRED = (
    every_combination(SWITCHES, *MASK_SWITCHES)
    + every_combination(SWITCHES, "split", "drop_last_partial_validation_sequence")
    + [{"total": "on a sample boundary", "epochs": "one", "add_extra_token": extra} for extra in (True, False)]
    + [{"total": end, **combination} for end in ENDS
       for combination in every_combination(SWITCHES, "split", "drop_last_partial_validation_sequence")]
    # The stream's last sample, every way it can end: at the stream's end, one token short of its last label,
    # one over; with the extra token or without; the pad in or out of the vocabulary; kept as a partial
    # sample (valid) or dropped (docs/dataset.md, Corners).
    + [{"total": end, "add_extra_token": extra, "pad": pad, "split": "valid", "drop_last_partial_validation_sequence": drop}
       for end in ENDS for extra in (True, False) for pad in ("in the data", "out of vocabulary") for drop in (True, False)]
)


def stream_end(leftover: int, sequence_length: int) -> str:
    """Where a stream whose last ``leftover`` tokens (past the extra) fill no whole sample ends."""
    if leftover == 0:
        return "on a sample boundary"
    if leftover == 1:
        return "one token past"
    return "one token short" if leftover == sequence_length - 1 else "anywhere"


def possible(row: Row) -> bool:
    """``num_samples`` reached exactly needs a ``num_samples``, and leaves a whole final epoch, far above the
    threshold; a partial sample supplies ``num_samples`` only where the valid split keeps it, and only where one
    epoch ends off a sample boundary: not where two end one token past one with the extra token, nor on one
    without it (the stream's length is twice an epoch's)."""
    epochs, total, extra = row.get("epochs"), row.get("total"), row.get("add_extra_token")
    reached = total == "num_samples reached exactly"
    partial = epochs == _NUM_SAMPLES_SET[-1]
    return not (
        (reached and epochs in ("one", "several, final epoch apart", *_NUM_SAMPLES_SET))
        or (partial and (row.get("split", "valid") != "valid" or row.get("drop_last_partial_validation_sequence") is True))
        or (partial and (total, extra) in (("one token past", True), ("on a sample boundary", False)))
    )


def realized_switches(case: DatasetCase) -> Row:
    """The value of every switch of :data:`SWITCHES` that ``case`` realizes (the oracle's formulas)."""
    config, lengths = case.config, [len(document) for document in case.documents]
    tokens = sum(lengths)
    epochs = oracle_num_epochs(tokens, config)
    total = epochs * tokens
    if config.num_epochs is not None:
        how_many = "num_epochs"
    elif config.num_samples is None:
        how_many = "one"
    elif epochs == 1:
        how_many = "one, from num_samples"
    else:
        how_many = _several_epochs(config, tokens, epochs)
    extra = extra_tokens(config)
    if config.num_samples is not None and total == config.num_samples * config.sequence_length + extra:
        boundary = "num_samples reached exactly"
    else:
        boundary = stream_end((total - extra) % config.sequence_length, config.sequence_length)
    if config.pad_id < 0:
        pad = "out of vocabulary"
    else:
        pad = "in the data" if any((document == config.pad_id).any() for document in case.documents) else "in vocabulary, absent"
    shortest = min(lengths)
    first = "the last sample" if case.last_sample_first else "shuffle positions"
    if not case.last_sample_first and case.serve_order[:1] == (None,):
        first = "a batch-padding sample"
    return {
        "epochs": how_many,
        "total": boundary,
        "pad": pad,
        "documents": ("an empty one", "a one-token one")[shortest] if shortest < 2 else "none shorter than two",
        "served first": first,
        **{name: getattr(config, name) for name in CONFIG_SWITCHES},
    }


def _several_epochs(config, tokens: int, epochs: int) -> str:
    """The value of ``epochs`` for several epochs derived from ``num_samples``."""
    if sample_count((epochs - 1) * tokens, config) >= config.num_samples:  # the split's count would take fewer
        return _NUM_SAMPLES_SET[-1]
    from_final = config.num_samples - samples_before_final_epoch(tokens, epochs, config)
    offset = from_final - final_epoch_threshold(tokens, config)
    named = {offset: name for name, offset in FINAL_EPOCH_CORNERS.items()}
    if offset in named:
        return named[offset]
    return "several, final epoch apart" if separate_final_epoch(tokens, epochs, config) else "several, from num_samples"


def final_epoch_threshold(tokens: int, config) -> int:
    """The samples below which a final epoch is shuffled apart: ``int(0.8 * samples per epoch)``."""
    return int(FINAL_EPOCH_THRESHOLD * ((tokens - extra_tokens(config)) // config.sequence_length))


@functools.cache
def corner_cases() -> tuple[DatasetCase, ...]:
    """One case per row of the covering array over :data:`SWITCHES` (:data:`REQUIRED` included)."""
    return tuple(corner_case(row, number) for number, row in enumerate(covering_array(SWITCHES, REQUIRED, possible)))


def corner_case(row: Row, number: int) -> DatasetCase:
    """The case that realizes ``row``: :func:`corner_candidate` with the fewest tokens added to its last document
    (the final epoch's threshold grows with the samples an epoch supplies)."""
    for grow in range(64):
        case = corner_candidate(row, number, grow)
        if realized_switches(case) == row:
            return case
    raise AssertionError(f"no corner case of up to 63 more tokens realizes {row}")


def corner_candidate(row: Row, number: int, grow: int) -> DatasetCase:
    """A case built for ``row``; ``number`` seeds its tokens and shuffle and picks L (3 or 5: odd, so that two
    epochs can end anywhere against a boundary; 5 where the stream ends "anywhere"), ``grow`` lengthens it."""
    rng = np.random.default_rng(number)
    # 5 where the stream ends "anywhere": neither on a boundary nor one token either side of one.
    length, extra = 5 if row["total"] == "anywhere" else (3, 5)[number % 2], int(row["add_extra_token"])
    eod_id, pad_id, vocab_size = 0, 7, 12
    # Three documents of more than L tokens: at least three samples per epoch, so that a final epoch
    # supplying one of them is shuffled apart.
    short = {"an empty one": [0], "a one-token one": [1]}.get(row["documents"], [])
    lengths = [*short, *(int(size) for size in rng.integers(length + 1, length + 4, 3))]
    lengths[-1] += grow
    epochs = 1 if row["epochs"].startswith("one") else 2
    end = "on a sample boundary" if row["total"] == "num_samples reached exactly" else row["total"]
    while stream_end((epochs * sum(lengths) - extra) % length, length) != end:
        lengths[-1] += 1
    documents = []
    for size in lengths:
        document = rng.choice([token for token in range(1, vocab_size) if token != pad_id], size=size)
        document[rng.random(size) < 0.2] = eod_id
        if row["pad"] == "in the data":
            document[rng.random(size) < 0.2] = pad_id
        documents.append(document.astype(np.int64))
    if row["pad"] == "in the data":
        documents[-1][0] = pad_id
    if documents[-1].size:
        documents[-1][-1] = eod_id
    tokens = sum(lengths)
    exact = (epochs * tokens - extra) // length  # with on_boundary: num_samples * L + extra == the total
    per_epoch = (tokens - extra) // length
    num_samples = {
        "one, from num_samples": exact - (row["total"] == "on a sample boundary"),
        "num_epochs": exact if row["total"] == "num_samples reached exactly" else None,
        "several, from num_samples": exact - (row["total"] == "on a sample boundary"),
        "several, final epoch apart": per_epoch + 1,
        **{name: per_epoch + int(FINAL_EPOCH_THRESHOLD * per_epoch) + offset for name, offset in FINAL_EPOCH_CORNERS.items()},
        _NUM_SAMPLES_SET[-1]: -(-(tokens - extra) // length),  # one epoch's, its partial sample counted
    }.get(row["epochs"])
    config = GPTDatasetConfig(
        sequence_length=length,
        vocab_size=vocab_size,
        eod_id=eod_id,
        pad_id=-1 if row["pad"] == "out of vocabulary" else pad_id,
        random_seed=number,
        num_epochs=2 if row["epochs"] == "num_epochs" else None,
        num_samples=num_samples,
        **{name: row[name] for name in CONFIG_SWITCHES},
    )
    serve_order = {"a batch-padding sample": (None, 1), "shuffle positions": (1, 0)}.get(row["served first"], ())
    return DatasetCase(tuple(documents), config, serve_order, row["served first"] == "the last sample")


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
