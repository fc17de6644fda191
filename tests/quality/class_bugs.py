"""One bug per class of case that only an explicit corner reaches, planted as a contributor's slip in a copy of impl
(loaded by name as ``tests.quality.class_bugs:NAME``); each passes every case outside its class:

* the index build (docs/dataset.md, Indices): the final epoch's decision flipped one sample below, at or above the
  threshold ``int(0.8 * samples per epoch)`` (``final_epoch_below``, ``final_epoch_at``, ``final_epoch_above``); the
  epoch count taken from the split's own sample count, which a valid split keeping its partial sample rounds up
  (``epochs_from_split_count``); a valid split's kept partial sample counted one too many when the stream ends on a
  sample boundary (``split_boundary_count``);
* ``NanToNumTrainer``: impl's trainer replacing the non-finite gradients of an overflowing float16 step by finite
  ones, so the loss scaler takes the step it should skip (docs/budget.md, float16);
* ``EMPTY_WINDOW_LOSS``, ``EmptyWindowTrainer``: a window that masks nothing returns a detached zero, its backward
  skipped, instead of a zero that backpropagates (a rank with an empty window then joins no all-reduce);
* ``MASK_TOKEN_AT_VOCAB_LOSS``, ``token_at_vocab_dataset``: the vocabulary's bound off
  by one, a token id equal to ``vocab_size`` accepted (docs/dataset.md, Bad input; docs/trainer.md, Contract tests).

The logits trainer's own corner bugs are in tests/quality/corner_bugs.py.
"""

from __future__ import annotations

from unittest import mock

import torch

from impl import diffusion_noise, gpt_dataset
from impl.diffusion_loss import WindowedDiffusionLoss
from impl.gpt_dataset import FINAL_EPOCH_THRESHOLD, GPTDataset
from impl.trainer import WindowedDiffusionTrainer

# --- the index build -------------------------------------------------------------------------------------------


def _built_with(**replaced):
    """A dataset factory: impl's dataset built with some of its index helpers replaced."""

    def factory(documents, config):
        from parity.dataset.impl import impl_config

        with mock.patch.multiple(gpt_dataset, **replaced):
            return GPTDataset(documents, impl_config(config))

    return factory


def _flipped_at(offset: int):
    """impl's decision whether the final epoch is shuffled apart, flipped where the final epoch supplies
    ``threshold + offset`` samples."""
    correct = gpt_dataset._separate_final_epoch

    def separate(tokens_per_epoch, num_epochs, config):
        apart = correct(tokens_per_epoch, num_epochs, config)
        if config.num_epochs is not None or config.num_samples is None or num_epochs == 1:
            return apart
        from_final = config.num_samples - gpt_dataset._samples_before_final_epoch(tokens_per_epoch, num_epochs, config)
        per_epoch = (tokens_per_epoch - config.extra) // config.sequence_length
        return apart != (from_final == int(FINAL_EPOCH_THRESHOLD * per_epoch) + offset)

    return separate


final_epoch_below = _built_with(_separate_final_epoch=_flipped_at(-1))
final_epoch_at = _built_with(_separate_final_epoch=_flipped_at(0))
final_epoch_above = _built_with(_separate_final_epoch=_flipped_at(1))


def _epochs_from_split_count(correct):
    def num_epochs(tokens_per_epoch, config):
        """The fewest epochs whose *split's* sample count reaches ``num_samples`` (megatron's rule is on tokens)."""
        if config.num_epochs is not None or config.num_samples is None:
            return correct(tokens_per_epoch, config)
        epochs = 1
        while config.sample_count(epochs * tokens_per_epoch) < config.num_samples:
            epochs += 1
        return epochs

    return num_epochs


epochs_from_split_count = _built_with(_num_epochs=_epochs_from_split_count(gpt_dataset._num_epochs))


def _count_on_a_boundary_one_too_many(correct):
    def sample_count(config, total_tokens):
        usable = total_tokens - config.extra
        if usable <= 0 or config.drops_last_partial:
            return correct(config, total_tokens)
        return usable // config.sequence_length + 1  # the ceiling, but one too many on a boundary

    return sample_count


def split_boundary_count(documents, config):
    """impl's dataset whose valid split, keeping its partial sample, counts ``usable // L + 1`` samples."""
    from impl.dataset_config import GPTDatasetConfig
    from parity.dataset.impl import impl_config

    counted = _count_on_a_boundary_one_too_many(GPTDatasetConfig.sample_count)
    with mock.patch.object(GPTDatasetConfig, "sample_count", counted):
        return GPTDataset(documents, impl_config(config))


# --- float16: the scaler's skipped step ----------------------------------------------------------------------


class NanToNumTrainer(WindowedDiffusionTrainer):
    """Makes every gradient finite after the backward, "to survive float16": an overflowing step is then taken
    with huge gradients where the loss scaler would have skipped it."""

    def training_step(self, model, inputs, num_items_in_batch=None):
        loss = super().training_step(model, inputs, num_items_in_batch)
        for parameter in model.parameters():
            if parameter.grad is not None:
                parameter.grad.nan_to_num_()
        return loss


# --- the empty window --------------------------------------------------------------------------------------------


class EmptyWindowLoss(WindowedDiffusionLoss):
    """impl's loss returning a detached zero for a window that masks nothing: no gradient path."""

    def microbatch_loss(self, model, noised, count=None):
        if count is not None and int(count.num_items) == 0:
            return torch.zeros((), device=noised["input_ids"].device)
        return super().microbatch_loss(model, noised, count)


EMPTY_WINDOW_LOSS = EmptyWindowLoss()


class EmptyWindowTrainer(WindowedDiffusionTrainer):
    """impl's trainer with :class:`EmptyWindowLoss`."""

    diffusion_loss = EMPTY_WINDOW_LOSS


# --- the vocabulary's bound ---------------------------------------------------------------------------------------


def _accepting_vocab_size(correct):
    def validate(window, *, mask_token_id, vocab_size, eps):
        return correct(window, mask_token_id=mask_token_id, vocab_size=None if mask_token_id == vocab_size else vocab_size,
                       eps=eps)

    return validate


class MaskTokenAtVocabLoss(WindowedDiffusionLoss):
    """impl's loss whose mask-token check reads ``<= vocab_size``."""

    def prepare_window(self, window, **kwargs):
        with mock.patch.object(diffusion_noise, "validate_window", _accepting_vocab_size(diffusion_noise.validate_window)):
            return super().prepare_window(window, **kwargs)


MASK_TOKEN_AT_VOCAB_LOSS = MaskTokenAtVocabLoss()


def token_at_vocab_dataset(documents, config):
    """impl's dataset whose token check reads ``> vocab_size``: an id equal to ``vocab_size`` is served."""
    from parity.dataset.impl import impl_config

    cfg = impl_config(config)
    real = gpt_dataset._corpus_and_lengths
    with mock.patch.object(gpt_dataset, "_corpus_and_lengths", lambda docs, vocab: real(docs, vocab + 1)):
        return GPTDataset(documents, cfg)
