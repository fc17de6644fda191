"""A Megatron-LM style GPT dataset whose token-independent masks are cached (SPEC §4).

Samples are fixed windows of ``sequence_length`` tokens over the documents laid end to end in a
shuffled, multi-epoch order. Without the EOD resets the loss mask, position ids and causal mask are
the same for every sample, so they are computed once and copied out on every later call: the copy
is several times cheaper than rebuilding the ``[1, L, L]`` mask. Every returned tensor owns its
memory, so a consumer that edits a batch in place cannot change the cache or any other sample.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from numbers import Integral

import numpy as np
import torch

SPLITS = ("train", "valid", "test")


@dataclass(frozen=True)
class GPTDatasetConfig:
    """What a sample looks like and how the indices are drawn (SPEC §4.1)."""

    sequence_length: int
    vocab_size: int
    eod_id: int
    #: -1 (upstream's default when the tokenizer has none) is out of vocabulary; an in-vocabulary
    #: pad id is allowed and may also occur as ordinary data.
    pad_id: int = -1
    add_extra_token: bool = True
    reset_position_ids: bool = False
    reset_attention_mask: bool = False
    eod_mask_loss: bool = False
    create_attention_mask: bool = True
    split: str = "train"
    #: Only the valid split may keep its last, right-padded sample; train and test always drop it.
    drop_last_partial_validation_sequence: bool = True
    #: Seeds numpy's RandomState, as upstream, hence the range [0, 2**32).
    random_seed: int = 1234
    num_epochs: int | None = None
    num_samples: int | None = None

    def __post_init__(self) -> None:
        if self.sequence_length < 1:
            raise ValueError(f"sequence_length must be an integer >= 1, got {self.sequence_length}")
        if self.vocab_size < 1:
            raise ValueError(f"vocab_size must be an integer >= 1, got {self.vocab_size}")
        if not 0 <= self.eod_id < self.vocab_size:
            raise ValueError(f"eod_id must be in [0, vocab_size={self.vocab_size}), got {self.eod_id}")
        if self.pad_id != -1 and not 0 <= self.pad_id < self.vocab_size:
            raise ValueError(
                f"pad_id must be -1 or in [0, vocab_size={self.vocab_size}), got {self.pad_id}"
            )
        if self.pad_id == self.eod_id:
            raise ValueError(f"pad_id must differ from eod_id={self.eod_id}, got {self.pad_id}")
        if self.split not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}, got {self.split!r}")
        if not 0 <= self.random_seed < 2**32:
            raise ValueError(f"random_seed must be in [0, 2**32), got {self.random_seed}")
        if self.num_epochs is not None and self.num_epochs < 1:
            raise ValueError(f"num_epochs must be None or an integer >= 1, got {self.num_epochs}")
        if self.num_samples is not None and self.num_samples < 1:
            raise ValueError(f"num_samples must be None or an integer >= 1, got {self.num_samples}")

    @property
    def extra(self) -> int:
        """Tokens read beyond the sequence so that labels are the inputs shifted by one."""
        return 1 if self.add_extra_token else 0

    @property
    def drops_last_partial(self) -> bool:
        return self.split != "valid" or self.drop_last_partial_validation_sequence

    @property
    def caches_masks(self) -> bool:
        """Without the EOD resets the masks do not depend on the tokens, so one copy serves all."""
        return not (self.reset_position_ids or self.reset_attention_mask or self.eod_mask_loss)

    def sample_count(self, total_tokens: int) -> int:
        """Samples in a stream of ``total_tokens`` (SPEC §4.2); consecutive samples share ``extra`` tokens."""
        usable = total_tokens - self.extra
        if usable <= 0:
            return 0
        if self.drops_last_partial:
            return usable // self.sequence_length
        return _ceil_div(usable, self.sequence_length)

    def min_tokens_for(self, num_samples: int) -> int:
        """The shortest stream that yields ``num_samples`` samples (the inverse of :meth:`sample_count`)."""
        if self.drops_last_partial:
            return num_samples * self.sequence_length + self.extra
        return (num_samples - 1) * self.sequence_length + self.extra + 1


@dataclass
class SampleMasks:
    """The tensors derived from a sample's tokens alone; ``attention_mask`` is None when not requested."""

    loss_mask: torch.Tensor
    position_ids: torch.Tensor
    attention_mask: torch.Tensor | None

    def clone(self) -> SampleMasks:
        return SampleMasks(
            loss_mask=self.loss_mask.clone(),
            position_ids=self.position_ids.clone(),
            attention_mask=None if self.attention_mask is None else self.attention_mask.clone(),
        )


class GPTDataset:
    """``dataset[k]`` serves sample ``shuffle_index[k]``; ``dataset[None]`` is a batch-padding sample."""

    def __init__(self, documents: Sequence[np.ndarray], config: GPTDatasetConfig) -> None:
        self.config = config
        self._corpus, lengths = _corpus_and_lengths(documents, config.vocab_size)
        num_epochs = _num_epochs(int(lengths.sum()), config)

        rng = np.random.RandomState(config.random_seed)
        self.document_index = np.tile(np.arange(len(lengths), dtype=np.int64), num_epochs)
        rng.shuffle(self.document_index)

        # Where each position of document_index starts in the multi-epoch stream (plus its end), and
        # the shift that turns a stream offset inside that position into an offset into _corpus.
        self._stream_starts = np.concatenate(([0], np.cumsum(lengths[self.document_index])))
        corpus_starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
        self._corpus_shift = corpus_starts[self.document_index] - self._stream_starts[:-1]

        total_tokens = int(self._stream_starts[-1])
        num_samples = config.sample_count(total_tokens)
        sample_starts = np.minimum(np.arange(num_samples + 1) * config.sequence_length, total_tokens)
        positions = np.searchsorted(self._stream_starts, sample_starts, side="right") - 1
        self.sample_index = np.stack((positions, sample_starts - self._stream_starts[positions]), axis=1)

        self.shuffle_index = np.arange(num_samples, dtype=np.int64)
        rng.shuffle(self.shuffle_index)

        self._cached_masks: SampleMasks | None = None
        self._positions = torch.arange(config.sequence_length)

    def __len__(self) -> int:
        return len(self.shuffle_index)

    def __getitem__(self, idx: int | None) -> dict[str, torch.Tensor]:
        config = self.config
        text = self._sample_text(self._sample_id(idx))
        tokens, labels = self._tokens_and_labels(text)
        masks = self._masks(tokens)
        loss_mask = masks.loss_mask
        loss_mask[labels == config.pad_id] = 0.0
        tokens[tokens == config.pad_id] = 0
        labels[labels == config.pad_id] = 0
        if idx is None:
            loss_mask = torch.zeros_like(loss_mask)
        sample = {
            "tokens": tokens,
            "labels": labels,
            "loss_mask": loss_mask,
            "position_ids": masks.position_ids,
        }
        if masks.attention_mask is not None:
            sample["attention_mask"] = masks.attention_mask
        return sample

    def _sample_id(self, idx: int | None) -> int:
        if idx is None:
            return int(self.shuffle_index[0])
        if isinstance(idx, bool) or not isinstance(idx, Integral):
            raise TypeError(f"dataset index must be an int or None, got {type(idx).__name__}")
        if not 0 <= idx < len(self):
            raise IndexError(f"dataset index {idx} out of range [0, {len(self)})")
        return int(self.shuffle_index[idx])

    def _sample_text(self, sample_id: int) -> np.ndarray:
        """Tokens ``[start, start + L + extra)`` of the stream, right-padded with ``pad_id``."""
        config = self.config
        first_position, offset = self.sample_index[sample_id]
        start = self._stream_starts[first_position] + offset
        stop = min(start + config.sequence_length + config.extra, self._stream_starts[-1])
        stream_offsets = np.arange(start, stop)
        # Only positions at or after the sample's first one can hold its tokens.
        positions = first_position + np.searchsorted(
            self._stream_starts[first_position + 1 :], stream_offsets, side="right"
        )
        text = np.full(config.sequence_length + config.extra, config.pad_id, dtype=np.int64)
        text[: len(stream_offsets)] = self._corpus[stream_offsets + self._corpus_shift[positions]]
        return text

    def _tokens_and_labels(self, text: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
        """Two tensors with storage of their own, so that replacing pads in one leaves the other alone."""
        length = self.config.sequence_length
        if self.config.extra:
            labels = text[1:].copy()
        else:
            labels = np.empty(length, dtype=np.int64)
            labels[:-1] = text[1:]
            labels[-1] = self.config.pad_id
        return torch.from_numpy(text[:length].copy()), torch.from_numpy(labels)

    def _masks(self, tokens: torch.Tensor) -> SampleMasks:
        if not self.config.caches_masks:
            return self._compute_masks(tokens)
        if self._cached_masks is None:
            masks = self._compute_masks(tokens)
            self._fill_cache(masks)
            return masks
        return self._from_cache()

    def _fill_cache(self, masks: SampleMasks) -> None:
        """Store a copy: the caller masks pads in place in the tensors it returns."""
        self._cached_masks = masks.clone()

    def _from_cache(self) -> SampleMasks:
        """Copies, so that neither this sample's consumer nor a later call can reach the cache."""
        return self._cached_masks.clone()

    def _compute_masks(self, tokens: torch.Tensor) -> SampleMasks:
        config = self.config
        is_eod = tokens == config.eod_id
        loss_mask = torch.ones(config.sequence_length, dtype=torch.float32)
        if config.eod_mask_loss:
            loss_mask[is_eod] = 0.0

        position_ids = self._positions.clone()
        if config.reset_position_ids:
            # A segment starts one past the last EOD before it; the EOD itself keeps its position.
            after_eod = torch.where(is_eod, self._positions + 1, 0)
            segment_start = torch.cummax(after_eod, dim=0).values.roll(1)
            segment_start[0] = 0
            position_ids -= segment_start

        attention_mask = None
        if config.create_attention_mask:
            blocked = self._positions[None, :] > self._positions[:, None]
            if config.reset_attention_mask:
                # Segment = how many EODs lie strictly before a position; no row sees an earlier one.
                segment = torch.cumsum(is_eod, dim=0) - is_eod.long()
                blocked |= segment[None, :] < segment[:, None]
            attention_mask = blocked.unsqueeze(0)
        return SampleMasks(loss_mask=loss_mask, position_ids=position_ids, attention_mask=attention_mask)


def _corpus_and_lengths(documents: Sequence[np.ndarray], vocab_size: int) -> tuple[np.ndarray, np.ndarray]:
    """All documents in one int64 array, and their lengths; ValueError naming ``documents`` for
    anything a sample cannot use. Token ranges are checked once over the whole corpus, not per
    document, which keeps 10^5 documents cheap."""
    arrays = [np.asarray(document) for document in documents]
    if not arrays:
        raise ValueError("documents must hold at least one document, got none")
    for number, array in enumerate(arrays):
        if array.ndim != 1:
            raise ValueError(f"documents must be 1-D token arrays; document {number} has shape {array.shape}")
        if array.size and array.dtype.kind not in "iu":
            raise ValueError(f"documents must hold integer token ids; document {number} has dtype {array.dtype}")
    lengths = np.array([array.size for array in arrays], dtype=np.int64)
    if not lengths.any():
        raise ValueError("documents must not all be empty")
    corpus = np.concatenate(arrays, dtype=np.int64, casting="unsafe")  # huge unsigned ids wrap negative
    outside = np.flatnonzero((corpus < 0) | (corpus >= vocab_size))
    if outside.size:
        number = int(np.searchsorted(np.cumsum(lengths), outside[0], side="right"))
        raise ValueError(
            f"documents must hold token ids in [0, vocab_size={vocab_size}); document {number} holds "
            f"{corpus[outside[0]]}"
        )
    return corpus, lengths


def _num_epochs(tokens_per_epoch: int, config: GPTDatasetConfig) -> int:
    """``num_epochs`` if given, else the fewest epochs that supply ``num_samples``, else one."""
    wanted = config.num_samples or 1
    if config.num_epochs is not None:
        epochs = config.num_epochs
    elif config.num_samples is not None:
        epochs = max(1, _ceil_div(config.min_tokens_for(wanted), tokens_per_epoch))
    else:
        epochs = 1
    supplied = config.sample_count(epochs * tokens_per_epoch)
    if supplied < wanted:
        raise ValueError(
            f"documents hold {tokens_per_epoch} tokens per epoch: {epochs} epoch(s) supply {supplied} "
            f"samples of sequence_length={config.sequence_length} (+{config.extra} extra token), "
            f"need at least {wanted}"
        )
    return epochs


def _ceil_div(numerator: int, denominator: int) -> int:
    return -(-numerator // denominator)
