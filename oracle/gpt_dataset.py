"""The naive GPT dataset (SPEC §4): one flat token stream, masks rebuilt from scratch with loops.

It takes the target's ``document_index`` and ``shuffle_index`` because the properties ask "is
sample k served correctly given these indices?"; whether the indices themselves are sane is checked
separately, against :func:`expected_num_epochs` and :func:`expected_sample_count`. The config is read
by attribute name only, so the oracle depends on nothing in the implementation.
"""

from __future__ import annotations

import torch


def extra_tokens(config) -> int:
    """1 when each sample reads one token more than its length, so labels are inputs shifted by one."""
    return 1 if config.add_extra_token else 0


def drops_last_partial(config) -> bool:
    """Train and test always drop a last, incomplete sample; valid drops it only when asked to."""
    if config.split == "valid":
        return config.drop_last_partial_validation_sequence
    return True


def expected_sample_count(total_tokens: int, sequence_length: int, extra: int, drop_last: bool) -> int:
    """The SPEC §4.2 formula: ``(total_tokens - extra) / L`` rounded down when the last partial
    sample is dropped, up when it is kept; no samples from a stream of ``extra`` tokens or fewer."""
    usable = total_tokens - extra
    if usable <= 0:
        return 0
    whole_samples, leftover = divmod(usable, sequence_length)
    if leftover and not drop_last:
        return whole_samples + 1
    return whole_samples


def expected_num_epochs(tokens_per_epoch: int, config) -> int:
    """``num_epochs`` if given; else the fewest epochs whose samples reach ``num_samples``; else 1."""
    if config.num_epochs is not None:
        return config.num_epochs
    if config.num_samples is None:
        return 1
    epochs = 1
    while _sample_count(epochs * tokens_per_epoch, config) < config.num_samples:
        epochs += 1
    return epochs


def _sample_count(total_tokens: int, config) -> int:
    return expected_sample_count(
        total_tokens, config.sequence_length, extra_tokens(config), drops_last_partial(config)
    )


class OracleGPTDataset:
    """``dataset[k]`` is sample ``shuffle_index[k]``: ``flat[j*L : j*L + L + extra]``, right-padded."""

    def __init__(self, documents, config, document_index, shuffle_index) -> None:
        self.config = config
        self.shuffle_index = [int(sample) for sample in shuffle_index]
        self.flat = [int(token) for position in document_index for token in documents[int(position)]]
        self.length = _sample_count(len(self.flat), config)

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, idx):
        config = self.config
        length = config.sequence_length
        if idx is None:
            sample = self.shuffle_index[0]
        elif 0 <= idx < len(self):
            sample = self.shuffle_index[idx]
        else:
            raise IndexError(f"dataset index {idx} out of range [0, {len(self)})")

        window = length + extra_tokens(config)
        text = self.flat[sample * length : sample * length + window]
        text = text + [config.pad_id] * (window - len(text))
        if extra_tokens(config):
            tokens = text[:-1]
            labels = text[1:]
        else:
            tokens = text
            labels = text[1:] + [config.pad_id]

        loss_mask = self._loss_mask(tokens)
        for i in range(length):
            if labels[i] == config.pad_id:
                loss_mask[i] = 0.0
        if idx is None:
            loss_mask = [0.0] * length
        served = {
            "tokens": torch.tensor([0 if t == config.pad_id else t for t in tokens], dtype=torch.int64),
            "labels": torch.tensor([0 if t == config.pad_id else t for t in labels], dtype=torch.int64),
            "loss_mask": torch.tensor(loss_mask, dtype=torch.float32),
            "position_ids": torch.tensor(self._position_ids(tokens), dtype=torch.int64),
        }
        if config.create_attention_mask:
            served["attention_mask"] = torch.tensor([self._blocked(tokens)], dtype=torch.bool)
        return served

    def _loss_mask(self, tokens) -> list[float]:
        """Ones; zero where the input token is EOD when ``eod_mask_loss``."""
        eod_masked = self.config.eod_mask_loss
        return [0.0 if eod_masked and token == self.config.eod_id else 1.0 for token in tokens]

    def _position_ids(self, tokens) -> list[int]:
        """0, 1, 2, ...; with ``reset_position_ids`` the count restarts after each EOD."""
        positions = []
        position = 0
        for token in tokens:
            positions.append(position)
            position += 1
            if self.config.reset_position_ids and token == self.config.eod_id:
                position = 0
        return positions

    def _blocked(self, tokens) -> list[list[bool]]:
        """True = row may not attend to column: the future, and with ``reset_attention_mask`` any
        column at or before an EOD that comes before the row."""
        length = len(tokens)
        rows = []
        last_eod_before_row = -1
        for row in range(length):
            if row > 0 and tokens[row - 1] == self.config.eod_id:
                last_eod_before_row = row - 1
            blocked_row = []
            for column in range(length):
                future = column > row
                earlier_document = self.config.reset_attention_mask and column <= last_eod_before_row
                blocked_row.append(future or earlier_document)
            rows.append(blocked_row)
        return rows
