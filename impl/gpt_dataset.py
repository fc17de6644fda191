"""A Megatron-LM style GPT dataset whose token-independent masks are cached (docs/dataset.md).

Samples are fixed windows of ``sequence_length`` tokens over the documents laid end to end in a
shuffled, multi-epoch order; the indices are megatron-core's, bit for bit (docs/dataset.md,
Indices). Without the EOD resets the loss mask, position ids and causal mask are the same for every
sample, so they are computed once. The loss mask, which each sample edits (its padding), is copied
out on every call. The position ids and the ``[1, L, L]`` causal mask are handed out shared, as
megatron-core does, but write-protected: they are made under ``torch.inference_mode()``, so any
in-place update or view write outside inference mode raises instead of changing every later sample,
and a DataLoader's collation stacks them into ordinary tensors (docs/dataset.md, Shared masks). So a
consumer that edits a batch in place cannot change the cache or any other sample, and serving a
sample costs no copy of its largest tensor.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from numbers import Integral

import numpy as np
import torch

from impl.dataset_config import SPLITS, GPTDatasetConfig

__all__ = ["SPLITS", "GPTDataset", "GPTDatasetConfig", "SampleMasks"]

#: A final epoch supplying fewer than this share of an epoch's samples is shuffled on its own.
FINAL_EPOCH_THRESHOLD = 0.80


@dataclass
class SampleMasks:
    """The tensors derived from a sample's tokens alone; ``attention_mask`` is None when not requested."""

    loss_mask: torch.Tensor
    position_ids: torch.Tensor
    attention_mask: torch.Tensor | None

    def shared(self) -> SampleMasks:
        """The masks to keep and serve: the token-independent ones write-protected (inference tensors),
        the loss mask a copy of its own, which :meth:`served` copies again for every sample."""
        with torch.inference_mode():
            position_ids = self.position_ids.clone()
            attention_mask = None if self.attention_mask is None else self.attention_mask.clone()
        return SampleMasks(loss_mask=self.loss_mask.clone(), position_ids=position_ids, attention_mask=attention_mask)

    def served(self) -> SampleMasks:
        """One sample's masks from the kept ones: its own loss mask, the shared write-protected rest."""
        return SampleMasks(self.loss_mask.clone(), self.position_ids, self.attention_mask)


class GPTDataset:
    """``dataset[k]`` serves sample ``shuffle_index[k]``; ``dataset[None]`` is a batch-padding sample."""

    def __init__(self, documents: Sequence[np.ndarray], config: GPTDatasetConfig) -> None:
        self.config = config
        self._corpus, lengths = _corpus_and_lengths(documents, config.vocab_size)
        tokens_per_epoch = int(lengths.sum())
        num_epochs = _num_epochs(tokens_per_epoch, config)
        separate = _separate_final_epoch(tokens_per_epoch, num_epochs, config)

        # One RandomState, drawn from in megatron-core's order: documents, then samples.
        rng = np.random.RandomState(config.random_seed)
        documents_ids = np.arange(len(lengths), dtype=np.int64)
        if separate:
            self.document_index = np.concatenate(
                (_shuffled(np.tile(documents_ids, num_epochs - 1), rng), _shuffled(documents_ids.copy(), rng))
            )
        else:
            self.document_index = _shuffled(np.tile(documents_ids, num_epochs), rng)

        # Where each position of document_index starts in the multi-epoch stream (plus its end), and
        # the shift that turns a stream offset inside that position into an offset into _corpus.
        self._stream_starts = np.concatenate(([0], np.cumsum(lengths[self.document_index])))
        corpus_starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
        self._corpus_shift = corpus_starts[self.document_index] - self._stream_starts[:-1]

        total_tokens = int(self._stream_starts[-1])
        num_samples = config.sample_count(total_tokens)
        self.sample_index = self._build_sample_index(num_samples, lengths)

        if separate:
            before = _samples_before_final_epoch(tokens_per_epoch, num_epochs, config)
            self.shuffle_index = np.concatenate(
                (
                    _shuffled(np.arange(before, dtype=np.int64), rng),
                    _shuffled(np.arange(before, num_samples, dtype=np.int64), rng),
                )
            )
        else:
            self.shuffle_index = _shuffled(np.arange(num_samples, dtype=np.int64), rng)

        self._cached_masks: SampleMasks | None = None
        self._positions = torch.arange(config.sequence_length)
        self._length, self._extra, self._total_tokens = config.sequence_length, config.extra, total_tokens

    def _build_sample_index(self, num_samples: int, lengths: np.ndarray) -> np.ndarray:
        """megatron-core's sample index (docs/dataset.md, Indices), vectorised: row j > 0 names the
        position holding the last token sample j - 1 reads (so an exact document end stays on that
        document when there is no extra token) and the offset of stream token j * L in it; a kept
        partial sample ends at the last position, offset ``len(document) - extra``."""
        config = self.config
        total_tokens = int(self._stream_starts[-1])
        starts = np.arange(1, num_samples + 1, dtype=np.int64) * config.sequence_length
        complete = starts + config.extra <= total_tokens
        last_read = np.minimum(starts + config.extra - 1, total_tokens - 1)
        positions = np.searchsorted(self._stream_starts, last_read, side="right") - 1
        offsets = starts - self._stream_starts[positions]
        last_position = len(self.document_index) - 1
        positions = np.where(complete, positions, last_position)
        offsets = np.where(complete, offsets, lengths[self.document_index[last_position]] - config.extra)
        sample_index = np.zeros((num_samples + 1, 2), dtype=np.int64)
        sample_index[1:, 0] = positions
        sample_index[1:, 1] = offsets
        return sample_index

    def __len__(self) -> int:
        return len(self.shuffle_index)

    def __getitem__(self, idx: int | None) -> dict[str, torch.Tensor]:
        length, pad_id = self._length, self.config.pad
        text, complete = self._sample_text(self._sample_id(idx))
        # Two arrays with storage of their own, so that replacing pads in one leaves the other alone.
        if self._extra:
            tokens, labels = text[:length], text[1:].copy()
        else:
            tokens, labels = text, np.empty(length, dtype=np.int64)
            labels[:-1] = text[1:]
            labels[-1] = pad_id
        masks = self._masks(torch.from_numpy(tokens))  # from the tokens before pads are replaced
        loss_mask = masks.loss_mask
        # An out-of-vocabulary pad occurs only in the padding of an incomplete sample.
        if pad_id >= 0 or not complete or not self._extra:
            label_pads = labels == pad_id
            loss_mask.numpy()[label_pads] = 0.0  # in place, as upstream
            tokens[tokens == pad_id] = 0
            labels[label_pads] = 0
        if idx is None:
            loss_mask = torch.zeros_like(loss_mask)
        sample = {
            "tokens": torch.from_numpy(tokens),
            "labels": torch.from_numpy(labels),
            "loss_mask": loss_mask,
            "position_ids": masks.position_ids,
        }
        if masks.attention_mask is not None:
            sample["attention_mask"] = masks.attention_mask
        return sample

    def _sample_id(self, idx: int | None) -> int:
        if idx is None:
            return int(self.shuffle_index[0])
        if type(idx) is not int and (isinstance(idx, bool) or not isinstance(idx, Integral)):
            raise TypeError(f"dataset index must be an int or None, got {type(idx).__name__}")
        if not 0 <= idx < len(self.shuffle_index):
            raise IndexError(f"dataset index {idx} out of range [0, {len(self)})")
        return int(self.shuffle_index[idx])

    def _sample_text(self, sample_id: int) -> tuple[np.ndarray, bool]:
        """Tokens ``[start, start + L + extra)`` of the stream, right-padded with ``pad``, and
        whether the stream held all of them. Read document piece by document piece, starting at
        the sample's first position: each piece is one slice of the corpus."""
        window = self._length + self._extra
        start = sample_id * self._length
        stop = min(start + window, self._total_tokens)
        text = np.empty(window, dtype=np.int64)
        starts, shifts, corpus = self._stream_starts, self._corpus_shift, self._corpus
        position = int(self.sample_index[sample_id, 0])
        filled = 0
        while start < stop:
            end = min(int(starts[position + 1]), stop)
            if end > start:
                shift = int(shifts[position])
                text[filled : filled + end - start] = corpus[start + shift : end + shift]
                filled += end - start
                start = end
            position += 1
        text[filled:] = self.config.pad
        return text, filled == window

    def _masks(self, tokens: torch.Tensor) -> SampleMasks:
        if not self.config.caches_masks:
            return self._compute_masks(tokens)
        if self._cached_masks is None:  # the first sample keeps the masks it computed, all its own
            masks = self._compute_masks(tokens)
            self._fill_cache(masks)
            return masks
        return self._from_cache()

    def _fill_cache(self, masks: SampleMasks) -> None:
        """Keep the masks before any sample's padding is applied: the caller masks pads in place in the
        loss mask it returns, so the cache keeps a loss mask of its own."""
        self._cached_masks = masks.shared()

    def _from_cache(self) -> SampleMasks:
        """This sample's own loss mask; the rest shared, and refusing writes (:meth:`SampleMasks.shared`)."""
        return self._cached_masks.served()

    def _compute_masks(self, tokens: torch.Tensor) -> SampleMasks:
        config = self.config
        is_eod = tokens == config.eod
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
    if not len(documents):
        raise ValueError("documents must hold at least one document, got none")
    try:  # the common case in one pass: 1-D integer arrays
        lengths = np.fromiter(map(len, documents), dtype=np.int64, count=len(documents))
        corpus = np.concatenate(documents)
        usable = corpus.ndim == 1 and corpus.dtype.kind in "iu"
    except (TypeError, ValueError):
        usable = False
    if not usable:  # find the document to name (an empty one may have any dtype)
        arrays = [np.asarray(document) for document in documents]
        for number, array in enumerate(arrays):
            if array.ndim != 1:
                raise ValueError(f"documents must be 1-D token arrays; document {number} has shape {array.shape}")
            if array.size and array.dtype.kind not in "iu":
                raise ValueError(f"documents must hold integer token ids; document {number} has dtype {array.dtype}")
        lengths = np.array([array.size for array in arrays], dtype=np.int64)
        corpus = np.concatenate(arrays, dtype=np.int64, casting="unsafe")
    if not lengths.any():
        raise ValueError("documents must not all be empty")
    corpus = corpus.astype(np.int64, casting="unsafe", copy=False)  # huge unsigned ids wrap negative
    # One reduction checks both ends: seen unsigned, a negative id is larger than any vocabulary.
    if corpus.view(np.uint64).max() >= vocab_size:  # the offender only when needed
        outside = np.flatnonzero((corpus < 0) | (corpus >= vocab_size))
        number = int(np.searchsorted(np.cumsum(lengths), outside[0], side="right"))
        raise ValueError(
            f"documents must hold token ids in [0, vocab_size={vocab_size}); document {number} holds "
            f"{corpus[outside[0]]}"
        )
    return corpus, lengths


def _shuffled(array: np.ndarray, rng: np.random.RandomState) -> np.ndarray:
    rng.shuffle(array)
    return array


def _num_epochs(tokens_per_epoch: int, config: GPTDatasetConfig) -> int:
    """``num_epochs`` if given; else, with ``num_samples``, the fewest epochs whose tokens reach
    ``num_samples * L + extra`` (megatron-core's rule, for every split); else one."""
    wanted = config.num_samples or 1
    if config.num_epochs is not None:
        epochs = config.num_epochs
    elif config.num_samples is not None:
        epochs = max(1, _ceil_div(config.num_samples * config.sequence_length + config.extra, tokens_per_epoch))
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


def _samples_before_final_epoch(tokens_per_epoch: int, num_epochs: int, config: GPTDatasetConfig) -> int:
    return ((num_epochs - 1) * tokens_per_epoch - config.extra) // config.sequence_length


def _separate_final_epoch(tokens_per_epoch: int, num_epochs: int, config: GPTDatasetConfig) -> bool:
    """Epochs derived from ``num_samples``: a final epoch that supplies fewer than 80 % of an
    epoch's samples is shuffled apart from the others (docs/dataset.md, Indices)."""
    if config.num_epochs is not None or config.num_samples is None or num_epochs == 1:
        return False
    from_final = config.num_samples - _samples_before_final_epoch(tokens_per_epoch, num_epochs, config)
    per_epoch = (tokens_per_epoch - config.extra) // config.sequence_length
    return from_final < int(FINAL_EPOCH_THRESHOLD * per_epoch)


def _ceil_div(numerator: int, denominator: int) -> int:
    return -(-numerator // denominator)
