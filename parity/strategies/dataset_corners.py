"""The corners of the dataset properties (docs/dataset.md), each an explicit example in the default run on purpose.

The corners of docs/dataset.md are the values of :data:`SWITCHES`: the three mask switches
``reset_position_ids``, ``reset_attention_mask``, ``eod_mask_loss`` (all eight settings),
``create_attention_mask``, every split with either value of ``drop_last_partial_validation_sequence``
(train and test ignore it), the extra token, token totals anywhere, exactly on a sample boundary, or
exactly what ``num_samples`` asks for, one epoch or several (given, or derived from
``num_samples`` with and without a separately shuffled final epoch), in-vocabulary pads in the data,
empty and one-token documents, and what is served first. Every one is in the default run on
purpose: :func:`corner_cases` builds one explicit example per row of a covering array over them
(every value, every pair of values, all eight mask settings, every split with either flag, an exact
boundary with and without the extra token).
The random strategy that draws beyond them is :mod:`parity.strategies.dataset`; it labels what it reached with the
switches read here (:func:`realized_switches`).
"""

from __future__ import annotations

import functools

import numpy as np

from oracle.gpt_indices import (
    FINAL_EPOCH_THRESHOLD,
    extra_tokens,
    sample_count,
    samples_before_final_epoch,
    separate_final_epoch,
)
from oracle.gpt_indices import num_epochs as oracle_num_epochs
from parity.cases import DatasetCase
from parity.dataset_config import SPLITS, GPTDatasetConfig
from parity.strategies.covering import Row, covering_array, every_combination

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


