"""A masked-diffusion library's trainer, as research code ships it (docs/trainer.md, What a target may bring).

``ResearchDiffusionTrainer`` reads its eps and noise schedule from its own ``TrainingArguments``
subclass, accepts eps only in (0, 1), needs its tokenizer, and pads with its own collator, which
applies the EOS rule (pad ids and pad labels become EOS, the attention mask is dropped). Registered
bare, it crashes in ``__init__``; shipped with what it needs (``shipped_trainers.py``), it is correct.
``EosCollatingTrainer`` sets up that collator itself, ``OpenEpsTrainer`` refuses eps = 1.
``tests/harness/test_trainer_outside.py`` packages this file,
unedited, outside the repository. It knows nothing of the harness.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from transformers import TrainingArguments

from impl.logits_trainer import LogitsDiffusionTrainer

IGNORE_INDEX = -100


@dataclass
class DiffusionArguments(TrainingArguments):
    """The library's arguments: the Trainer's, plus the noising's settings."""

    time_epsilon: float = 1e-3
    noise_schedule: str = "linear"


class EosPaddingCollator:
    """Right padding with the EOS rule applied: pad ids become EOS, pad labels EOS on a row with an
    answer (-100 on a row without), and no attention mask: the model attends the EOS padding."""

    def __init__(self, tokenizer):
        self.eos = tokenizer.eos_token_id

    def __call__(self, examples):
        longest = max(len(e["input_ids"]) for e in examples)
        ids, labels = [], []
        for e in examples:
            pad = longest - len(e["input_ids"])
            answered = any(label != IGNORE_INDEX for label in e["labels"])
            ids.append(list(e["input_ids"]) + [self.eos] * pad)
            labels.append(list(e["labels"]) + [self.eos if answered else IGNORE_INDEX] * pad)
        return {"input_ids": torch.tensor(ids), "labels": torch.tensor(labels)}


class ResearchDiffusionTrainer(LogitsDiffusionTrainer):
    """Its settings from its arguments, its mask id from its tokenizer, eps only in (0, 1)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.eps = self.args.time_epsilon
        if self.args.noise_schedule != "linear":
            raise ValueError(f"noise_schedule {self.args.noise_schedule!r} is not implemented")
        if not 0.0 < self.eps < 1.0:
            raise ValueError(f"eps must be in (0, 1), got {self.eps!r}")
        if self.processing_class.mask_token_id != self.model.config.mask_token_id:
            raise ValueError("the tokenizer's mask token is not the model's")


class EosCollatingTrainer(LogitsDiffusionTrainer):
    """The logits trainer that pads with its own EOS collator when it is given none."""

    def __init__(self, *args, data_collator=None, processing_class=None, **kwargs):
        data_collator = data_collator or EosPaddingCollator(processing_class)
        super().__init__(*args, data_collator=data_collator, processing_class=processing_class, **kwargs)


class OpenEpsTrainer(LogitsDiffusionTrainer):
    """The logits trainer, refusing eps = 1 (p = 1 masks every maskable token)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if not 0.0 < self.eps < 1.0:
            raise ValueError(f"eps must be in (0, 1), got {self.eps!r}")
