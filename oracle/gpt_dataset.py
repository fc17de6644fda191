"""The naive GPT dataset (docs/dataset.md): one flat token stream, masks rebuilt from scratch with loops.

The oracle builds its own indices with :mod:`oracle.gpt_indices` (megatron-core's algorithm and
seeding) and serves sample ``shuffle_index[k]`` as a slice of the documents laid end to end in
``document_index`` order. The config is read by attribute name only, so the oracle depends on
nothing in the implementation.
"""

from __future__ import annotations

import torch

from oracle.gpt_indices import build_indices, drops_last_partial, extra_tokens, num_epochs, sample_count

__all__ = ["OracleGPTDataset", "build_indices", "drops_last_partial", "extra_tokens", "num_epochs", "sample_count"]


class OracleGPTDataset:
    """``dataset[k]`` is sample ``shuffle_index[k]``: ``flat[j*L : j*L + L + extra]``, right-padded."""

    def __init__(self, documents, config) -> None:
        self.config = config
        self.indices = build_indices([len(document) for document in documents], config)
        self.document_index = self.indices["document_index"]
        self.sample_index = self.indices["sample_index"]
        self.shuffle_index = [int(sample) for sample in self.indices["shuffle_index"]]
        self.flat = [int(token) for position in self.document_index for token in documents[int(position)]]
        self.length = sample_count(len(self.flat), config)

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
