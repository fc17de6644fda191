"""Hypothesis strategies for masked-diffusion training windows.

Shapes, kinds and one integer seed are drawn; the token values are then built with a local
``torch.Generator``, so an example stays small, shrinks well, and never touches the global RNG.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from hypothesis import strategies as st

from oracle.nemotron_diffusion import IGNORE_INDEX, TINY_CONFIG

VOCAB = TINY_CONFIG["vocab_size"]
MASK_TOKEN_ID = TINY_CONFIG["mask_token_id"]

#: Row kinds: a response (prompt + answer + padding), all prompt (nothing to supervise), no padding.
ROW_KINDS = ("answer", "prompt-only", "full")


@dataclass(frozen=True)
class WindowCase:
    """A training run in miniature: windows of microbatches plus everything else that is drawn."""

    window_sizes: tuple[int, ...]
    rows_per_microbatch: int
    length: int
    batch_kinds: tuple[tuple[str, ...], ...]  # per microbatch, per row
    with_labels: bool
    with_attention_mask: bool
    data_seed: int
    noise_seed: int
    eps: float
    dtype: torch.dtype
    frozen_head: bool
    model_seed: int = 0
    lr: float = 0.5
    windows: list = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "windows", build_windows(self))


def build_windows(case: WindowCase) -> list[list[dict[str, torch.Tensor]]]:
    generator = torch.Generator().manual_seed(case.data_seed)
    batches = iter([build_microbatch(kinds, case, generator) for kinds in case.batch_kinds])
    return [[next(batches) for _ in range(size)] for size in case.window_sizes]


def build_microbatch(kinds: tuple[str, ...], case: WindowCase, generator: torch.Generator) -> dict[str, torch.Tensor]:
    """Right-padded rows: prompt, then answer, then padding; labels supervise the answer only."""
    ids = torch.randint(0, MASK_TOKEN_ID, (len(kinds), case.length), generator=generator)
    attention = torch.ones_like(ids)
    labels = torch.full_like(ids, IGNORE_INDEX)
    for row, kind in enumerate(kinds):
        prompt, answer = _split(kind, case.length, generator)
        attention[row, prompt + answer :] = 0
        labels[row, prompt : prompt + answer] = ids[row, prompt : prompt + answer]
    batch = {"input_ids": ids}
    if case.with_attention_mask:
        batch["attention_mask"] = attention
    if case.with_labels:
        batch["labels"] = labels
    return batch


def _split(kind: str, length: int, generator: torch.Generator) -> tuple[int, int]:
    """(prompt length, answer length) of a row of ``length`` positions."""
    if kind == "full":
        prompt = int(torch.randint(0, length, (), generator=generator))
        return prompt, length - prompt
    used = int(torch.randint(1, length + 1, (), generator=generator))
    if kind == "prompt-only":
        return used, 0
    prompt = int(torch.randint(0, used, (), generator=generator))
    return prompt, used - prompt


@st.composite
def window_cases(
    draw,
    *,
    max_window: int = 6,
    max_microbatches: int = 8,
    window_size: int | None = None,
    dtypes=(torch.float32, torch.float64),
    empty_first_window: bool | None = None,
) -> WindowCase:
    """A few windows of up to ``max_window`` microbatches; the last may be a partial window.

    The first window is sometimes (always, with ``empty_first_window=True``) left with nothing to
    mask: every row all prompt, so no realized mask whatever the draws.
    """
    accumulation = window_size or draw(st.integers(1, max_window))
    full_windows = draw(st.integers(1, max(1, max_microbatches // accumulation)))
    partial = 0 if window_size else draw(st.integers(0, accumulation - 1))
    sizes = (accumulation,) * full_windows + ((partial,) if partial else ())
    rows = draw(st.integers(1, 3))
    empty_window = draw(st.booleans()) if empty_first_window is None else empty_first_window
    kinds = []
    for size in sizes:
        for _ in range(size):
            if empty_window and len(kinds) < sizes[0]:
                kinds.append(("prompt-only",) * rows)
            else:
                kinds.append(tuple(draw(st.sampled_from(ROW_KINDS)) for _ in range(rows)))
    return WindowCase(
        window_sizes=sizes,
        rows_per_microbatch=rows,
        length=draw(st.integers(2, 12)),
        batch_kinds=tuple(kinds),
        with_labels=draw(st.booleans()) or empty_window,
        with_attention_mask=draw(st.booleans()),
        data_seed=draw(st.integers(0, 2**32 - 1)),
        noise_seed=draw(st.integers(0, 2**32 - 1)),
        eps=draw(st.sampled_from([1e-3, 0.1, 0.5, 1.0]) | st.floats(1e-3, 1.0)),
        dtype=draw(st.sampled_from(dtypes)),
        frozen_head=draw(st.booleans()),
    )
