"""The dataset config every dataset target receives: owned by the harness, not by any target.

A dataset target is a factory ``(documents, config) -> dataset``; ``config`` is a
:class:`GPTDatasetConfig`. Its fields mirror megatron-core's ``GPTDatasetConfig`` plus the
tokenizer's ``eod``/``pad`` and the split; every field is listed in the README ("The dataset
config") and the semantics are in docs/dataset.md.
"""

from __future__ import annotations

from dataclasses import dataclass

SPLITS = ("train", "valid", "test")


@dataclass(frozen=True)
class GPTDatasetConfig:
    """What a sample looks like and how the indices are drawn (docs/dataset.md, Config)."""

    #: L: tokens per sample (``tokens``, ``labels``, ``loss_mask``, ``position_ids`` have length L).
    sequence_length: int
    #: Token ids are in ``[0, vocab_size)``.
    vocab_size: int
    #: The end-of-document id (megatron: ``tokenizer.eod``).
    eod_id: int
    #: The padding id (megatron: ``tokenizer.pad``). -1 (upstream's default when the tokenizer has
    #: none) is out of vocabulary; an in-vocabulary pad id is allowed and may also occur as data.
    pad_id: int = -1
    #: Read L + 1 tokens per sample so that labels are the inputs shifted by one
    #: (megatron: ``add_extra_token_to_sequence``).
    add_extra_token: bool = True
    #: Positions restart at 0 after each EOD.
    reset_position_ids: bool = False
    #: No position attends to a position at or before an earlier EOD.
    reset_attention_mask: bool = False
    #: Loss mask 0 where the input token is EOD.
    eod_mask_loss: bool = False
    #: Return the ``[1, L, L]`` bool ``attention_mask`` (True = blocked).
    create_attention_mask: bool = True
    #: "train", "valid" or "test" (megatron: the ``Split`` the dataset is built for).
    split: str = "train"
    #: Only the valid split may keep its last, right-padded sample; train and test always drop it.
    drop_last_partial_validation_sequence: bool = True
    #: Seeds numpy's RandomState, as upstream, hence the range [0, 2**32).
    random_seed: int = 1234
    #: Whole passes over the documents. Not a megatron-core setting: a megatron target declines it.
    num_epochs: int | None = None
    #: At least this many samples (megatron: the ``num_samples`` constructor argument). Without
    #: ``num_epochs``, the epochs are the fewest whose tokens reach ``num_samples * L + extra``.
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


def upstream_documents(seed: int) -> list:
    """Eight documents of differing length (1 to 119 tokens) and content, each closed by an EOD:
    unlike upstream's mock ramps, no two samples look alike, so a sample boundary or index that is
    off by one shows as a difference."""
    import numpy as np

    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 120, size=8)
    return [np.append(rng.integers(1, 64, size=length - 1), 0).astype(np.int64) for length in lengths]


def upstream_config() -> GPTDatasetConfig:
    """Upstream's case: a valid split that keeps its last, padded sample (sequence length 32). The report's
    ``dataset-cache`` scenario serves it, and a selected target's factory is first called on it
    (:func:`parity.contracts.preflight`)."""
    return GPTDatasetConfig(
        sequence_length=32, vocab_size=64, eod_id=0, split="valid", drop_last_partial_validation_sequence=False
    )
