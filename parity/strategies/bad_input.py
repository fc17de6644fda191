"""The bad input a target must refuse, declared once, by name: the table's ``validation/*`` properties run every
one (the suite's generated tests and the report's ``validation`` scenario), and the tests that pin impl's own
messages read the same names (docs/dataset.md, Bad input; docs/trainer.md, Contract tests and impl tests).

The space is small and finite, so every value is an explicit example: the bounds themselves (a token id equal
to ``vocab_size``, ``eps`` 0), where an off-by-one lives, are never left to a draw.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from parity.cases import VOCAB
from parity.dataset_config import GPTDatasetConfig

#: A valid config and documents: 10 tokens, two samples of 4 (+1).
VALID_CONFIG = GPTDatasetConfig(sequence_length=4, vocab_size=10, eod_id=0)
VALID_DOCUMENTS = (np.array([1, 2, 3, 4, 5, 0]), np.array([6, 7, 8, 0]))


#: Documents that cannot serve one sample of ``VALID_CONFIG``, each for its own reason only (five tokens or more
#: otherwise): a target that validates its input (``Target.validates_input``) refuses each with a ValueError.
BAD_DOCUMENTS = {
    "no document": (),
    "every document empty": (np.array([], dtype=np.int64), np.array([], dtype=np.int64)),
    "a 2-D document": (np.array([[1, 2, 3], [4, 5, 0]]),),
    "float token ids": (np.array([1.0, 2.0, 3.0, 4.0, 0.0]),),
    "a token id equal to vocab_size": (np.array([1, 2, 10, 3, 0]),),
    "a negative token id": (np.array([1, -1, 2, 3, 0]),),
    "too few tokens for one sample": (np.array([1, 2, 0]),),  # 3 tokens cannot fill 4 + 1
}


@dataclass(frozen=True)
class BadIndex:
    """An index of the two-sample dataset of ``VALID_DOCUMENTS`` and what it must raise."""

    index: Any
    raises: type[Exception]
    #: Every dataset target (an index past the end stops iteration and samplers), or only one that validates.
    every_target: bool


BAD_INDICES = {
    "len(dataset)": BadIndex(2, IndexError, True),
    "one past len(dataset)": BadIndex(3, IndexError, True),
    "far past the end": BadIndex(10**9, IndexError, True),
    "-1": BadIndex(-1, IndexError, False),
    "-len(dataset) - 1": BadIndex(-3, IndexError, False),
    "a str": BadIndex("0", TypeError, False),
    "a float": BadIndex(1.0, TypeError, False),
    "a bool": BadIndex(True, TypeError, False),
}


@dataclass(frozen=True)
class BadLossInput:
    """``prepare_window`` (or ``window_count``) called with these changes to a valid call; every loss target raises
    a ValueError before any draw."""

    #: ``prepare_window``'s keywords changed (``mask_token_id``, ``eps``).
    keywords: tuple[tuple[str, Any], ...] = ()
    #: The one microbatch's tensors replaced: ``(key, shape)``, e.g. labels of another shape.
    reshaped: tuple[str, tuple[int, ...]] | None = None
    #: An empty window, given to this method.
    empty_to: str | None = None


#: Every loss target refuses each with a ValueError before any draw.
BAD_LOSS_INPUTS = {
    "mask_token_id -1": BadLossInput(keywords=(("mask_token_id", -1),)),
    "mask_token_id equal to vocab_size": BadLossInput(keywords=(("mask_token_id", VOCAB),)),
    "mask_token_id past vocab_size": BadLossInput(keywords=(("mask_token_id", VOCAB + 5),)),
    "eps 0": BadLossInput(keywords=(("eps", 0.0),)),
    "eps negative": BadLossInput(keywords=(("eps", -0.1),)),
    "eps above 1": BadLossInput(keywords=(("eps", 1.5),)),
    "eps nan": BadLossInput(keywords=(("eps", float("nan")),)),
    "labels of another shape": BadLossInput(reshaped=("labels", (2, 4))),
    "attention_mask of another shape": BadLossInput(reshaped=("attention_mask", (2, 4))),
    "input_ids not a matrix": BadLossInput(reshaped=("input_ids", (5,))),
    "an empty window to prepare_window": BadLossInput(empty_to="prepare_window"),
    "an empty window to window_count": BadLossInput(empty_to="window_count"),
}

#: ``(setting, value)`` a trainer target never trains with (any refusal will do, at construction or when it trains):
#: the tiny model's mask token at the vocabulary's bound, and, for a trainer that declares its ``eps``, one outside
#: ``(0, 1]``.
BAD_TRAINER_INPUTS = {
    "mask_token_id equal to vocab_size": ("mask_token_id", VOCAB),
    "eps 0": ("eps", 0.0),
    "eps negative": ("eps", -0.5),
    "eps above 1": ("eps", 2.0),
}
