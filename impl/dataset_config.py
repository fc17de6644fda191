"""The settings of impl's GPT dataset, named as megatron-core names them (docs/dataset.md, Config).

impl's own type: production code does not depend on the harness that judges it. Its target
translates the harness's config into this one, as any outside adapter would (parity/dataset/impl.py).
"""

from __future__ import annotations

from dataclasses import dataclass

SPLITS = ("train", "valid", "test")


@dataclass(frozen=True)
class GPTDatasetConfig:
    """megatron-core's ``GPTDatasetConfig`` fields, the tokenizer's ``eod``/``pad``/``vocab_size``,
    the split, and how many epochs or samples to build."""

    sequence_length: int
    vocab_size: int
    eod: int
    #: -1: the tokenizer has no pad; an in-vocabulary pad may also occur as data.
    pad: int = -1
    add_extra_token_to_sequence: bool = True
    reset_position_ids: bool = False
    reset_attention_mask: bool = False
    eod_mask_loss: bool = False
    create_attention_mask: bool = True
    split: str = "train"
    drop_last_partial_validation_sequence: bool = True
    random_seed: int = 1234
    num_epochs: int | None = None
    num_samples: int | None = None

    def __post_init__(self) -> None:
        """A ValueError naming the first field outside what it allows."""
        allowed = {
            "sequence_length": (self.sequence_length >= 1, "an integer >= 1"),
            "vocab_size": (self.vocab_size >= 1, "an integer >= 1"),
            "eod": (0 <= self.eod < self.vocab_size, f"in [0, vocab_size={self.vocab_size})"),
            "pad": (self.pad == -1 or (0 <= self.pad < self.vocab_size and self.pad != self.eod),
                    f"-1 or in [0, vocab_size={self.vocab_size}) and not eod={self.eod}"),
            "split": (self.split in SPLITS, f"one of {SPLITS}"),
            "random_seed": (0 <= self.random_seed < 2**32, "in [0, 2**32)"),
            "num_epochs": (self.num_epochs is None or self.num_epochs >= 1, "None or an integer >= 1"),
            "num_samples": (self.num_samples is None or self.num_samples >= 1, "None or an integer >= 1"),
        }
        for field, (holds, what) in allowed.items():
            if not holds:
                raise ValueError(f"{field} must be {what}, got {getattr(self, field)!r}")

    @property
    def extra(self) -> int:
        """Tokens read beyond the sequence so that labels are the inputs shifted by one."""
        return 1 if self.add_extra_token_to_sequence else 0

    @property
    def drops_last_partial(self) -> bool:
        return self.split != "valid" or self.drop_last_partial_validation_sequence

    @property
    def caches_masks(self) -> bool:
        """Without the EOD resets the masks do not depend on the tokens, so one copy serves all."""
        return not (self.reset_position_ids or self.reset_attention_mask or self.eod_mask_loss)

    def sample_count(self, total_tokens: int) -> int:
        """Samples in a stream of ``total_tokens``; consecutive samples share ``extra`` tokens."""
        usable = total_tokens - self.extra
        if usable <= 0:
            return 0
        if self.drops_last_partial:
            return usable // self.sequence_length
        return -(-usable // self.sequence_length)
