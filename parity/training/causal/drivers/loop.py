"""The loop interface: a training step the user writes, judged by the window rule (docs/causal-lm.md, The loop
interface).

Most causal-LM training is not a ``transformers.Trainer`` but a loop of the user's own (torchtune's recipes,
megatron-core's schedule, a research script): it runs forward and backward itself, normalises the loss its own
way, and steps the optimizer. So the harness asks of a loop only what every such loop has: a way to wrap the model
for data parallelism once (DDP, FSDP2's ``fully_shard``, megatron's own DDP) and one optimizer step over a window
of microbatches. The driver owns everything else, so that what is judged is the loop's normalisation alone: it
builds the oracle's tiny model from the case's seed, plain SGD at the case's learning rate, serves each window
of the case's rows as batches, and reads the gradients the optimizer is handed (a step pre-hook: whatever the
loop did to them, scaling, reducing, copying megatron's ``main_grad``, is done by then) and the parameters after.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import torch
import torch.distributed as dist
from torch import nn

from oracle.causal_lm import tiny_causal_lm
from oracle.window_reference import StepResult
from parity.devices import torch_dtype
from parity.training.causal.drivers.batches import collate_rows
from parity.training.causal.record import CausalCase, CausalRecord
from parity.training.causal.rows import case_rows


class CausalLoop(Protocol):
    """A training step the user writes. ``microbatches`` are one accumulation window's batches, each a dict of
    ``input_ids`` and ``labels`` (aligned with the ids, -100 where nothing is supervised: the shift is the loss's
    job), with ``attention_mask`` for padded rows or ``position_ids`` restarting per document for packed ones
    (:func:`parity.training.causal.drivers.batches.collate_rows`)."""

    def prepare(self, model: nn.Module) -> nn.Module:
        """Once, before the optimizer is built: the model as the loop trains it (wrapped in DDP, sharded, or itself).
        The returned module may list in ``.patched`` what had to change to run on this device; the verdict says so."""
        ...

    def step(self, model: nn.Module, optimizer: torch.optim.Optimizer, microbatches: Sequence[dict]) -> float:
        """Forward and backward over every microbatch, then ``optimizer.step()`` once; the loss it logs: the
        window's loss over every rank, the objective its gradient is of."""
        ...


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
    windows = case_rows(case)[rank]
    model = tiny_causal_lm(case.model_seed, torch_dtype(case.dtype)).to(case.device)
    trained = loop.prepare(model)
    named = dict(model.named_parameters())  # after prepare: fully_shard swaps in sharded parameters of the same names
    optimizer = torch.optim.SGD(trained.parameters(), lr=case.lr)
    handed: list[dict] = []
    optimizer.register_step_pre_hook(lambda *_: handed.append(
        {name: None if p.grad is None else _whole(p.grad) for name, p in named.items()}))
    steps = []
    for k, window in enumerate(windows):
        loss = loop.step(trained, optimizer, [_on(collate_rows(rows, case.packed), case.device) for rows in window])
        if len(handed) != k + 1:
            raise LoopContractError(f"{type(loop).__name__}.step called optimizer.step() {len(handed) - k} times in "
                                    f"window {k}; a loop steps once per window (docs/causal-lm.md, The loop interface)")
        params = {name: _whole(p) for name, p in named.items()}
        steps.append(StepResult(torch.tensor(float(loss), dtype=torch.float64), handed[k], params))
    return CausalRecord([[list(rows) for rows in window] for window in windows], steps,
                        patched=list(getattr(trained, "patched", ())))

