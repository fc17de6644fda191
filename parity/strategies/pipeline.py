"""Hypothesis strategies for the pipeline properties: prefixes, a blend, a split string, sizes.

One to three prefixes of a few documents each, drawn weights (a single prefix also without any:
megatron then builds its datasets directly), a split string of one to three weights (as users write
them, or any), the samples wanted per split, and the sample settings. A case megatron could not
build (a split given no token of some prefix: megatron would loop forever) is rejected
(:func:`parity.cases.pipeline_problem`). Token arrays come from a seeded generator, as in
:mod:`parity.strategies.dataset`, so a case shrinks through a few integers.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from hypothesis import assume
from hypothesis import strategies as st

from parity.cases import PipelineCase, pipeline_problem
from parity.dataset_config import GPTDatasetConfig
from parity.strategies.dataset import SEEDS

#: Blend weights: the first shrinks first; unequal ones make the greedy assignment interleave.
WEIGHTS = st.sampled_from((1.0, 2.0, 3.0, 0.5, 0.3, 7.0))
#: Split strings as users write them (Megatron's "969,30,1" needs hundreds of documents before its
#: test split gets one: it is an explicit example, not a draw).
USERS_SPLITS = ("1", "1,1,1", "6,3,1", "2,1", "1,0,1", "0,1,0")
#: What may differ between two configs sharing one cache folder (docs/dataset.md, The index cache).
VARIATIONS = ("random_seed", "sequence_length", "sizes", "split", "add_extra_token", "drop_last_partial_validation_sequence")


@st.composite
def split_strings(draw) -> str:
    if draw(st.booleans()):
        return draw(st.sampled_from(USERS_SPLITS))
    return ",".join(map(str, draw(st.lists(st.integers(0, 10), min_size=1, max_size=3).filter(any))))


@st.composite
def pipeline_cases(draw, max_prefixes: int = 3, max_documents: int = 8) -> PipelineCase:
    """A blend of one to three prefixes with drawn weights, a split string and sizes."""
    vocab_size = draw(st.integers(3, 40))
    eod_id = draw(st.integers(0, vocab_size - 1))
    pad_id = -1
    if draw(st.sampled_from((True, True, False))):  # in the vocabulary (and the data), or out of it
        pad_id = draw(st.integers(0, vocab_size - 2))
        pad_id += pad_id >= eod_id
    sequence_length = draw(st.integers(1, 6))
    split = draw(split_strings())
    rng = np.random.default_rng(draw(SEEDS))
    prefixes = []
    for _ in range(draw(st.integers(1, max_prefixes))):
        count = draw(st.integers(1, max_documents))
        lengths = rng.integers(1, 3 * sequence_length + 3, size=count)
        prefixes.append(tuple(document(rng, int(length), vocab_size, eod_id, pad_id) for length in lengths))
    weights = None
    if len(prefixes) > 1 or draw(st.booleans()):
        weights = tuple(draw(WEIGHTS) for _ in prefixes)
    sizes = tuple(draw(st.integers(1, 6)) for _ in range(3))
    config = GPTDatasetConfig(
        sequence_length=sequence_length,
        vocab_size=vocab_size,
        eod_id=eod_id,
        pad_id=pad_id,
        add_extra_token=draw(st.booleans()),
        create_attention_mask=draw(st.booleans()),
        drop_last_partial_validation_sequence=draw(st.booleans()),
        random_seed=draw(SEEDS),
    )
    assume(pipeline_problem(tuple(prefixes), weights, split, sizes, config) is None)
    return PipelineCase(tuple(prefixes), weights, split, sizes, config)


def document(rng, length: int, vocab_size: int, eod_id: int, pad_id: int) -> np.ndarray:
    """``length`` tokens with EODs and (an in-vocabulary) pad planted."""
    tokens = rng.integers(0, vocab_size, size=length, dtype=np.int64)
    tokens[rng.random(length) < 0.15] = eod_id
    if pad_id >= 0:
        tokens[rng.random(length) < 0.15] = pad_id
    return tokens


def varied(case: PipelineCase, variation: str) -> PipelineCase:
    """``case`` with one setting of :data:`VARIATIONS` changed: a config whose indices differ, which
    must not share the first one's index cache. When no other split string leaves every split a
    token, ``"split"`` changes the sizes instead."""
    config = case.config
    if variation == "split":
        for split in USERS_SPLITS:
            if split != case.split and pipeline_problem(case.prefixes, case.weights, split, case.sizes, config) is None:
                return replace(case, split=split)
        variation = "sizes"
    if variation == "sizes":
        return replace(case, sizes=tuple(size + 1 for size in case.sizes))
    change = {
        "random_seed": (config.random_seed + 1) % 2**32,
        "sequence_length": config.sequence_length + 1,
        "add_extra_token": not config.add_extra_token,
        "drop_last_partial_validation_sequence": not config.drop_last_partial_validation_sequence,
    }[variation]
    return replace(case, config=replace(config, **{variation: change}))


def _explicit(seed: int, counts, weights, split: str, sizes, **settings) -> PipelineCase:
    rng = np.random.default_rng(seed)
    config = GPTDatasetConfig(**{"sequence_length": 4, "vocab_size": 12, "eod_id": 0, "pad_id": 7, **settings})
    prefixes = tuple(
        tuple(
            document(rng, int(length), config.vocab_size, config.eod_id, config.pad_id) for length in rng.integers(2, 12, count)
        )
        for count in counts
    )
    return PipelineCase(prefixes, weights, split, sizes, config)


#: The explicit pipeline examples: a three-prefix blend over "6,3,1" whose valid split keeps its
#: partial sample (an in-vocabulary pad in the data: the cache bug's trigger); Megatron's "969,30,1"
#: over one prefix of 600 documents; two prefixes, the extra token off, every
#: split from the whole of each prefix (no split string: megatron's blend_per_split).
PIPELINE_CASES = (
    _explicit(0, (6, 5, 7), (0.3, 0.5, 0.2), "6,3,1", (8, 3, 2), drop_last_partial_validation_sequence=False),
    _explicit(1, (600,), (1.0,), "969,30,1", (6, 2, 2)),
    _explicit(2, (4, 6), (2.0, 1.0), None, (5, 3, 2), add_extra_token=False, pad_id=-1),
)
