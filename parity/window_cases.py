"""Training windows in miniature, built deterministically from a few numbers (no downloads).

``WindowCase`` is what a diffusion property draws and what the report runs: windows of right-padded
prompt/answer microbatches, the noise settings, the dtype and the model. ``parity_run`` runs a
loss target on it beside the oracle.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import torch

from oracle.nemotron_diffusion import IGNORE_INDEX, TINY_CONFIG
from oracle.remote_code import oracle_model_factory
from parity.window_run import NoiseSettings, ParityRun, run_parity

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
    lr: float = 0.01
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


#: The seed pull request's validation (docs/design.md): two equal-length answers (11 tokens), micro-batch 1, accumulation 2;
#: these seeds realize mask counts 7 and 10 (tests/diffusion/test_properties.py checks it).
SEED_SCENARIO = WindowCase(
    window_sizes=(2,),
    rows_per_microbatch=1,
    length=16,
    batch_kinds=(("full",), ("full",)),
    with_labels=True,
    with_attention_mask=True,
    data_seed=26,
    noise_seed=110,
    eps=1e-3,
    dtype=torch.float32,
    frozen_head=False,
)


def model_builder(case: WindowCase):
    """A fresh, identically seeded model per call: the target and each oracle run start equal."""
    return functools.partial(tiny_model, case.model_seed, case.dtype, case.frozen_head)


def tiny_model(seed: int, dtype: torch.dtype, frozen_head: bool = False):
    """The seeded tiny model: the built-in oracle's, or NVIDIA's own code when a folder is named
    (``--nemotron-remote-code`` / ``$PARITY_NEMOTRON_REMOTE_CODE``) with the same weights."""
    model = oracle_model_factory()(seed, dtype)
    model.diffusion_head.weight.requires_grad_(not frozen_head)
    return model


def parity_run(loss_target, case: WindowCase, device: str = "cpu", regroup=None) -> ParityRun:
    return run_parity(
        loss_target,
        model_builder(case),
        case.windows,
        NoiseSettings(case.noise_seed, case.eps),
        lr=case.lr,
        device=device,
        regroup=regroup,
    )
