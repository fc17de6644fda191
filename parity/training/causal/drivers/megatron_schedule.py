"""megatron-core's own schedule as a loop (docs/causal-lm.md, megatron-core's schedule).

What a megatron-core user runs, at pipeline size 1: the model wrapped in megatron's own
``DistributedDataParallel`` (its gradients land in ``main_grad``, reduced over the data-parallel group by
``finish_grad_sync``), ``get_forward_backward_func()`` over the window's microbatches with a Megatron-LM-style
``loss_func`` returning ``(loss_sum, count, {})``, ``finalize_model_grads`` as the config's
``finalize_model_grads_func`` (as Megatron-LM's ``training.py`` sets it), then the optimizer step after copying
``main_grad`` into ``grad`` (what megatron's own ``FP32Optimizer.prepare_grads`` does). ``calculate_per_token_loss``
is the one switch: off, the schedule divides each microbatch by its own count and by ``num_microbatches``; on, it
sums the counts and ``finalize_model_grads`` all-reduces them and scales the gradients by the inverse.

The schedule needs of a model only ``.config`` (a ``TransformerConfig``; its sizes are never read at pipeline size
1), ``.model_type`` and ``set_input_tensor``, so it drives the oracle's tiny Llama itself. On a CPU two CUDA-only
lines are patched, each in the one megatron module that has it and only while megatron runs; both are listed in the
record, so the verdict says so. On CUDA nothing is patched.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from unittest import mock

import torch
import torch.distributed as dist
import torch.nn.functional as F
from megatron.core import parallel_state
from megatron.core.distributed import (
    DistributedDataParallel,
    DistributedDataParallelConfig,
    finalize_model_grads,
    param_and_grad_buffer,
)
from megatron.core.enums import ModelType
from megatron.core.pipeline_parallel import get_forward_backward_func, schedules
from megatron.core.transformer import TransformerConfig
from torch import nn

from oracle.causal_lm import IGNORE_INDEX

#: What runs differently on a CPU, in the verdict's words (docs/causal-lm.md, megatron-core's schedule).
CPU_PATCHES = (
    'megatron/core/pipeline_parallel/schedules.py: the token total torch.zeros([], dtype=torch.int, device="cuda") '
    "made on the CPU",
    "megatron/core/distributed/param_and_grad_buffer.py: DDP's gradient buffer on the CPU, not "
    "torch.cuda.current_device()",
)


class _Torch:
    """``torch`` as one megatron module sees it on a CPU: the named members replaced, everything else torch's own."""

    def __init__(self, base, **replaced):
        self._base = base
        self.__dict__.update(replaced)

    def __getattr__(self, name):
        return getattr(self._base, name)


def _zeros_on_cpu(*args, device=None, **kwargs):
    return torch.zeros(*args, device="cpu" if device == "cuda" else device, **kwargs)


def _patched(module, torch_seen: _Torch, device: str):
    """``module``'s ``torch`` replaced while the block runs, on a CPU only."""
    return mock.patch.object(module, "torch", torch_seen) if device == "cpu" else contextlib.nullcontext()


class _ScheduledModel(nn.Module):
    """What the schedule needs of a model around a transformers causal LM: its logits from a batch."""

    def __init__(self, model: nn.Module, config: TransformerConfig):
        super().__init__()
        self.module = model
        self.config = config
        self.model_type = ModelType.encoder_or_decoder

    def set_input_tensor(self, tensor) -> None:
        """At pipeline size 1 no stage hands this one an input."""

    def forward(self, batch: dict) -> torch.Tensor:
        return self.module(input_ids=batch["input_ids"], attention_mask=batch.get("attention_mask"),
                           position_ids=batch.get("position_ids"), use_cache=False).logits  # packed: no cache (batches.py)


class MegatronSchedule:
    """megatron-core's ``forward_backward_no_pipelining`` with ``calculate_per_token_loss`` as given."""

    def __init__(self, per_token: bool):
        self.per_token = per_token

    def prepare(self, model: nn.Module) -> nn.Module:
        if not parallel_state.model_parallel_is_initialized():
            parallel_state.initialize_model_parallel(1, 1)
        config = TransformerConfig(num_layers=1, hidden_size=8, num_attention_heads=1,
                                   calculate_per_token_loss=self.per_token)
        config.finalize_model_grads_func = finalize_model_grads
        device = next(model.parameters()).device.type
        buffer_torch = _Torch(torch, cuda=_Torch(torch.cuda, current_device=lambda: "cpu"))
        with _patched(param_and_grad_buffer, buffer_torch, device):
            wrapped = DistributedDataParallel(config, DistributedDataParallelConfig(), _ScheduledModel(model, config))
        wrapped.patched = list(CPU_PATCHES) if device == "cpu" else []
        return wrapped

    def step(self, model: DistributedDataParallel, optimizer: torch.optim.Optimizer, microbatches: Sequence[dict]) -> float:
        model.zero_grad_buffer()
        losses, counts = [], []

        def forward_step(data_iterator, scheduled):
            batch = next(data_iterator)

            def loss_func(logits):  # Megatron-LM's pretrain_gpt loss_func, the shift done here
                targets = batch["labels"][:, 1:]
                kept = targets != IGNORE_INDEX
                loss = F.cross_entropy(logits[:, :-1][kept].float(), targets[kept], reduction="sum")
                count = kept.sum().to(torch.int)
                losses.append(loss)
                counts.append(count)
                return loss, count, {}

            return scheduled(batch), loss_func

        device = microbatches[0]["input_ids"].device.type
        with _patched(schedules, _Torch(torch, zeros=_zeros_on_cpu), device):
            get_forward_backward_func()(
                forward_step_func=forward_step, data_iterator=iter(microbatches), model=[model],
                num_microbatches=len(microbatches), seq_length=microbatches[0]["input_ids"].shape[1],
                micro_batch_size=microbatches[0]["input_ids"].shape[0], forward_only=False)
        for parameter in model.parameters():
            parameter.grad = parameter.main_grad
        logged = self._logged(losses, counts)
        optimizer.step()
        for parameter in model.parameters():
            parameter.grad = None
        return logged

    def _logged(self, losses: list[torch.Tensor], counts: list[torch.Tensor]) -> float:
        """The loss the step's gradient is of: what the schedule backpropagated (it scales each loss_func's loss in
        place, ``schedules.py`` 258-263, when the count is per microbatch), summed over the ranks and scaled as the
        gradients are after backward: by 1/the all-reduced count with per-token loss, else averaged over the ranks."""
        sums = torch.stack([sum(loss.detach() for loss in losses), sum(counts).to(losses[0].dtype)])
        group = parallel_state.get_data_parallel_group()
        dist.all_reduce(sums, group=group)
        return float(sums[0] / max(float(sums[1]), 1.0) if self.per_token else sums[0] / dist.get_world_size(group))


PER_TOKEN = MegatronSchedule(per_token=True)
DEFAULT = MegatronSchedule(per_token=False)
