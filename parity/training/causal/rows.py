"""The rows a causal-LM case trains on, drawn from its ``data_seed`` (docs/causal-lm.md, The rows).

Every rank gets ``steps`` windows of ``window_size`` microbatches of ``rows_per_microbatch`` rows (the last
``last_window`` microbatches where the case says so: the end of an epoch). A row is a
prompt (labels -100) and an answer (labels = ids), of a drawn length; about one row in five is prompt only,
so a microbatch, a window or a rank may supervise nothing (``empty_ranks``: a rank that surely does); a
packed row holds two such documents side by side. Plain lists: each driver turns them into its own batches (padding, position ids, its collator).
"""

from __future__ import annotations

import torch

from oracle.causal_lm import IGNORE_INDEX, TINY_CAUSAL_CONFIG, Document, Row
from parity.training.causal.record import CausalCase

#: Ids below this are special (pad 0, BOS 1, EOS 2): a drawn token is never one of them.
FIRST_ID = 3


def _document(generator: torch.Generator, length: int, prompt_only: bool) -> Document:
    ids = torch.randint(FIRST_ID, TINY_CAUSAL_CONFIG["vocab_size"], (length,), generator=generator).tolist()
    # a prompt of 0 supervises the first label too, which nothing predicts: a count taken before the shift differs
    prompt = length if prompt_only else int(torch.randint(0, length, (1,), generator=generator))
    return Document(tuple(ids), tuple([IGNORE_INDEX] * prompt + ids[prompt:]))


def _row(generator: torch.Generator, case: CausalCase, empty: bool) -> Row:
    pieces = 2 if case.packed else 1
    documents = []
    for _ in range(pieces):
        length = int(torch.randint(2, case.max_length // pieces + 1, (1,), generator=generator))
        prompt_only = bool(torch.rand((), generator=generator) < 0.2) or empty
        documents.append(_document(generator, length, prompt_only))
    return Row(tuple(documents))


def case_rows(case: CausalCase) -> list[list[list[list[Row]]]]:
    """``rows[r][k][g]``: the rows of microbatch ``g`` of window ``k`` on rank ``r``."""
    generator = torch.Generator().manual_seed(case.data_seed)
    return [[[[_row(generator, case, rank in case.empty_ranks) for _ in range(case.rows_per_microbatch)]
              for _ in range(size)] for size in case.window_sizes()] for rank in range(case.world_size)]
