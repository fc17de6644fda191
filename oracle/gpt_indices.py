"""The reference index builder (docs/dataset.md, Indices): megatron-core's algorithm, written slowly.

Three arrays decide which tokens a GPT dataset serves at ``dataset[k]``:

* ``document_index``: every document id once per epoch, shuffled by ``numpy.random.RandomState``
  seeded with ``random_seed``. When the last epoch is only partly used (``separate_final_epoch``),
  the earlier epochs are shuffled together and the final epoch on its own, after them.
* ``sample_index``: ``count + 1`` rows ``(position in document_index, token offset)``. Row 0 is
  ``(0, 0)``; row ``j + 1`` is where a walk of ``L + extra`` tokens starting at row ``j`` stops,
  stepped back by ``extra`` (so consecutive samples share ``extra`` tokens). A walk that runs out of
  documents (the kept partial sample of a valid split) stops at the last position with the offset
  ``len(document) - extra``.
* ``shuffle_index``: the sample ids ``0 .. count - 1`` shuffled by the same RandomState, after the
  document index; with ``separate_final_epoch`` the samples before the final epoch and those from
  it are shuffled separately.

Everything is read from the config by attribute name, and nothing here imports the implementation
or the harness: the builder must be able to disagree with both.
"""

from __future__ import annotations

import numpy as np

#: megatron-core shuffles a final epoch separately when it supplies fewer than this share of an
#: epoch's samples.
FINAL_EPOCH_THRESHOLD = 0.80


def extra_tokens(config) -> int:
    return 1 if config.add_extra_token else 0


def drops_last_partial(config) -> bool:
    """Train and test always drop a last, incomplete sample; valid drops it only when asked to."""
    if config.split == "valid":
        return config.drop_last_partial_validation_sequence
    return True


def sample_count(total_tokens: int, config) -> int:
    """``(total_tokens - extra) / L`` rounded down when the last partial sample is dropped, up when
    it is kept; none from a stream of ``extra`` tokens or fewer."""
    usable = total_tokens - extra_tokens(config)
    if usable <= 0:
        return 0
    whole, leftover = divmod(usable, config.sequence_length)
    if leftover and not drops_last_partial(config):
        return whole + 1
    return whole


def num_epochs(tokens_per_epoch: int, config) -> int:
    """``num_epochs`` when given; else, with ``num_samples``, the fewest epochs whose tokens reach
    ``num_samples * L + extra`` (for every split, whatever it does with a partial sample); else 1."""
    if config.num_epochs is not None:
        return config.num_epochs
    if config.num_samples is None:
        return 1
    wanted = config.num_samples * config.sequence_length + extra_tokens(config)
    epochs = 1
    while epochs * tokens_per_epoch < wanted:
        epochs += 1
    return epochs


def samples_before_final_epoch(tokens_per_epoch: int, epochs: int, config) -> int:
    return ((epochs - 1) * tokens_per_epoch - extra_tokens(config)) // config.sequence_length


def separate_final_epoch(tokens_per_epoch: int, epochs: int, config) -> bool:
    """Whether the final epoch is shuffled on its own: only when the epochs were derived from
    ``num_samples`` (not given as ``num_epochs``), there is more than one, and the final epoch
    supplies fewer than 80 % (rounded down) of a whole epoch's samples."""
    if config.num_epochs is not None or config.num_samples is None or epochs == 1:
        return False
    from_final = config.num_samples - samples_before_final_epoch(tokens_per_epoch, epochs, config)
    per_epoch = (tokens_per_epoch - extra_tokens(config)) // config.sequence_length
    return from_final < int(FINAL_EPOCH_THRESHOLD * per_epoch)


def _shuffled_epochs(num_documents: int, epochs: int, rng: np.random.RandomState) -> list[int]:
    order = np.array([document for _ in range(epochs) for document in range(num_documents)], dtype=np.int64)
    rng.shuffle(order)
    return [int(document) for document in order]


def _shuffled_range(start: int, stop: int, rng: np.random.RandomState) -> list[int]:
    order = np.array(list(range(start, stop)), dtype=np.int64)
    rng.shuffle(order)
    return [int(sample) for sample in order]


def build_indices(lengths, config) -> dict[str, np.ndarray]:
    """``document_index``, ``sample_index`` (shape ``[count + 1, 2]``) and ``shuffle_index`` for
    documents of the given lengths, plus ``num_epochs`` and ``separate_final_epoch`` (as 0-d arrays)."""
    lengths = [int(length) for length in lengths]
    tokens = sum(lengths)
    epochs = num_epochs(tokens, config)
    separate = separate_final_epoch(tokens, epochs, config)
    rng = np.random.RandomState(config.random_seed)

    if separate:
        document_index = _shuffled_epochs(len(lengths), epochs - 1, rng) + _shuffled_epochs(len(lengths), 1, rng)
    else:
        document_index = _shuffled_epochs(len(lengths), epochs, rng)

    count = sample_count(epochs * tokens, config)
    sample_index = _walk_samples(lengths, document_index, count, config)

    if separate:
        before = samples_before_final_epoch(tokens, epochs, config)
        shuffle_index = _shuffled_range(0, before, rng) + _shuffled_range(before, count, rng)
    else:
        shuffle_index = _shuffled_range(0, count, rng)

    return {
        "document_index": np.array(document_index, dtype=np.int64),
        "sample_index": np.array(sample_index, dtype=np.int64).reshape(-1, 2),
        "shuffle_index": np.array(shuffle_index, dtype=np.int64),
        "num_epochs": np.array(epochs),
        "separate_final_epoch": np.array(separate),
    }


def _walk_samples(lengths: list[int], document_index: list[int], count: int, config) -> list[tuple[int, int]]:
    """Row j + 1: where ``L + extra`` tokens read from row j end, less the ``extra`` shared token."""
    extra = extra_tokens(config)
    last = len(document_index) - 1
    position, offset = 0, 0
    rows = [(position, offset)]
    while len(rows) <= count:
        needed = config.sequence_length + extra
        while True:
            available = lengths[document_index[position]] - offset
            if available >= needed:  # this document finishes the sample
                offset += needed - extra
                break
            needed -= available
            if position == last:  # out of documents: a kept partial sample
                offset = lengths[document_index[position]] - extra
                break
            position += 1
            offset = 0
        rows.append((position, offset))
    return rows
