"""The loop interface: a training step the user writes, judged by the window rule (docs/causal-lm.md, The loop
interface).

Most causal-LM training is not a ``transformers.Trainer`` but a loop of the user's own (torchtune's recipes,
megatron-core's schedule, a research script): it runs forward and backward itself, normalises the loss its own
way, and steps the optimizer. So the harness asks of a loop only what every such loop has: a way to wrap the model
for data parallelism once (DDP, FSDP2's ``fully_shard``, megatron's own DDP) and one optimizer step over a window
of microbatches. The driver owns everything else, so that what is judged is the loop's normalisation alone: it
builds the model from the case's seed (the oracle's tiny Llama, or the loop's own ``model_builder``'s), plain SGD
at the case's learning rate, serves each window of the case's rows as batches, and reads the gradients the optimizer is handed (a step pre-hook: whatever the
loop did to them, scaling, reducing, copying megatron's ``main_grad``, is done by then) and the parameters after.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Protocol

import torch
import torch.distributed as dist
from torch import nn

from oracle.causal_lm import tiny_causal_lm
from oracle.window_reference import StepResult
from parity.devices import torch_dtype
from parity.training.causal.drivers.batches import collate_rows
from parity.training.causal.record import CausalCase, CausalRecord, builder_name
from parity.training.causal.rows import case_rows


class CausalLoop(Protocol):
    """A training step the user writes. ``microbatches`` are one accumulation window's batches, each a dict of
    ``input_ids`` and ``labels`` (aligned with the ids, -100 where nothing is supervised: the shift is the loss's
    job), with ``attention_mask`` for padded rows or ``position_ids`` restarting per document for packed ones
    (:func:`parity.training.causal.drivers.batches.collate_rows`).

    Optional, for a loop that wants to be told what the case asks: ``prepare`` and ``step`` may each take a
    keyword ``settings`` (a :class:`LoopSettings`), handed only to a method that names it; and ``supports``, a
    mapping of a setting's name (``average_tokens_across_devices``, ``dtype``, ``packed``) to the values the loop
    follows: a case asking another is declined, naming why, never judged. A loop told nothing is judged on the count over
    every rank only (docs/causal-lm.md, The loop interface). And ``model_builder``, for a loop that trains a model
    class of its own (a library's): a function at the top of a module, ``(seed, dtype) -> nn.Module``, the same
    weights from the same seed in every dtype (``oracle.causal_lm.seeded``), its vocabulary at least the rows'
    (``oracle.causal_lm.TINY_CAUSAL_CONFIG["vocab_size"]``); the oracle then runs a float64 copy of that model.
    Without one the loop trains the oracle's tiny Llama."""

    def prepare(self, model: nn.Module) -> nn.Module:
        """Once, before the optimizer is built: the model as the loop trains it (wrapped in DDP, sharded, or itself).
        The returned module may list in ``.patched`` what had to change to run on this device; the verdict says so."""
        ...

    def step(self, model: nn.Module, optimizer: torch.optim.Optimizer, microbatches: Sequence[dict]) -> float:
        """Forward and backward over every microbatch, then ``optimizer.step()`` once; the loss it logs: the
        window's loss over every rank, the objective its gradient is of."""
        ...


#: The settings a loop may declare it follows (``supports``), and every value a case may ask of each.
SETTINGS = {"average_tokens_across_devices": (True, False), "dtype": ("float32", "bfloat16", "float64"),
            "packed": (False, True)}


@dataclass(frozen=True)
class LoopSettings:
    """What a case asks of a loop, handed as the keyword ``settings`` to a ``prepare`` or ``step`` that names it
    (docs/causal-lm.md, The loop interface). A loop that names it in neither is told nothing, and is judged on the
    count over every rank alone (:func:`loop_declines`)."""

    #: True: the window's supervised count summed over every rank divides every rank's sum; False: each rank divides
    #: its sum by its own count and the ranks' gradients are averaged (transformers' setting of that name).
    average_tokens_across_devices: bool
    #: The dtype the driver built the model's weights in (``float32``, ``bfloat16`` or ``float64``).
    dtype: str
    device: str
    rank: int
    world_size: int
    #: Whether the case serves packed rows (several documents a row, ``position_ids`` restarting per document).
    packed: bool
    #: Microbatches in one accumulation window (the length of ``step``'s ``microbatches``; a last partial window's
    #: own, fewer, where the case has one; ``prepare`` is told the full window's).
    window_size: int


def loop_settings(case: CausalCase, rank: int, world_size: int) -> LoopSettings:
    return LoopSettings(case.average_tokens_across_devices, case.dtype, case.device, rank, world_size, case.packed,
                        case.window_size)


def takes_settings(method) -> bool:
    """Whether a loop's ``prepare`` or ``step`` names the keyword ``settings`` (a loop written before it keeps
    working: it is not handed one)."""
    try:
        return "settings" in inspect.signature(method).parameters
    except (TypeError, ValueError):
        return False


def supported(loop) -> dict[str, tuple]:
    """The values of each setting ``loop`` follows: what it declares in ``supports`` (a mapping of a setting's name
    to the values it follows), else every value, but a loop told nothing follows the count over every rank only."""
    told = takes_settings(getattr(loop, "step", None)) or takes_settings(getattr(loop, "prepare", None))
    values = {name: tuple(every) for name, every in SETTINGS.items()}
    if not told:
        values["average_tokens_across_devices"] = (True,)
    for name, declared in dict(getattr(loop, "supports", None) or {}).items():
        if name not in SETTINGS:
            raise LoopContractError(f"{type(loop).__name__}.supports names {name!r}; a loop declares "
                                    f"{', '.join(SETTINGS)} (docs/causal-lm.md, The loop interface)")
        values[name] = tuple(declared)
    return values


def loop_declines(loop, case: CausalCase) -> str | None:
    """Why ``loop`` is not judged on ``case`` (None when it is): a setting the case asks that the loop does not
    follow. With one rank each rank's own count is the window's, so the own-count setting declines nothing there."""
    values = supported(loop)
    asked = {"dtype": case.dtype, "packed": case.packed}
    if case.world_size > 1:
        asked["average_tokens_across_devices"] = case.average_tokens_across_devices
    for name, value in asked.items():
        if value not in values[name]:
            how = ("as its supports declares" if getattr(loop, "supports", None) else
                   "for a loop whose prepare and step take no settings is never told it")
            return (f"{type(loop).__name__} follows {name} in {values[name]} only, {how}; the case asks {value!r} "
                    "(docs/causal-lm.md, The loop interface)")
    return None


def is_loop(subject) -> bool:
    """Whether ``subject`` is a loop (an object with ``prepare`` and ``step``), not a ``Trainer`` class or a mode."""
    return not isinstance(subject, type) and hasattr(subject, "step") and hasattr(subject, "prepare")


def _with_settings(method, settings: LoopSettings, *args):
    return method(*args, settings=settings) if takes_settings(method) else method(*args)


class LoopContractError(RuntimeError):
    """A loop that did not step the optimizer exactly once in a window: no gradient of its can be judged."""


def _on(batch: dict, device: str) -> dict:
    return {name: value.to(device) if isinstance(value, torch.Tensor) else value for name, value in batch.items()}


def _whole(tensor: torch.Tensor) -> torch.Tensor:
    """A tensor as the verdict holds it: on the CPU, a sharded one (FSDP2's ``DTensor``) gathered whole first (a
    collective: every rank reads the same tensors in the same order)."""
    from torch.distributed.tensor import DTensor

    if isinstance(tensor, DTensor):
        tensor = tensor.full_tensor()
    return tensor.detach().to("cpu", copy=True)


def run_loop(loop: CausalLoop, case: CausalCase) -> CausalRecord:
    """This rank's run of ``loop`` on ``case`` (inside the process group the launch made, or alone)."""
    rank = dist.get_rank() if dist.is_initialized() else 0
    settings = loop_settings(case, rank, dist.get_world_size() if dist.is_initialized() else 1)
    windows = case_rows(case)[rank]
    builder = getattr(loop, "model_builder", None) or tiny_causal_lm
    try:
        model_name = builder_name(builder)
    except ValueError as error:
        raise LoopContractError(f"{type(loop).__name__}.model_builder: {error}") from None
    model = builder(case.model_seed, torch_dtype(case.dtype)).to(case.device)
    trained = _with_settings(loop.prepare, settings, model)
    named = dict(model.named_parameters())  # after prepare: fully_shard swaps in sharded parameters of the same names
    optimizer = torch.optim.SGD(trained.parameters(), lr=case.lr)
    handed: list[dict] = []
    optimizer.register_step_pre_hook(lambda *_: handed.append(
        {name: None if p.grad is None else _whole(p.grad) for name, p in named.items()}))
    steps = []
    for k, window in enumerate(windows):
        batches = [_on(collate_rows(rows, case.packed), case.device) for rows in window]
        # the last window may be partial (``case.last_window``): ``window_size`` is what this step is handed
        loss = _with_settings(loop.step, replace(settings, window_size=len(window)), trained, optimizer, batches)
        if len(handed) != k + 1:
            raise LoopContractError(f"{type(loop).__name__}.step called optimizer.step() {len(handed) - k} times in "
                                    f"window {k}; a loop steps once per window (docs/causal-lm.md, The loop interface)")
        params = {name: _whole(p) for name, p in named.items()}
        steps.append(StepResult(torch.tensor(float(loss), dtype=torch.float64), handed[k], params))
    return CausalRecord([[list(rows) for rows in window] for window in windows], steps,
                        patched=list(getattr(trained, "patched", ())), model=model_name)

