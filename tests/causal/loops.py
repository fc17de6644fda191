"""Training loops as a third party writes them, judged through the loop interface (docs/causal-lm.md, The loop
interface): torchtune's per-token rule (torchtune #1917) under torch's DDP or sharded with FSDP2's ``fully_shard``,
and its twin that keeps each rank's own count."""

from __future__ import annotations

import torch
import torch.distributed as dist
import torch.nn.functional as F

IGNORE_INDEX = -100


class PerTokenLoop:
    """Each microbatch's token-loss sum scaled by ``world / N`` before its backward, ``N`` the window's supervised
    count all-reduced over the ranks before the first forward (DDP and FSDP average the gradients, so the world size
    undoes that): torchtune's ``world_size / num_tokens``. ``across_ranks=False`` is the twin: each rank divides by
    its own count and the ranks' gradients are averaged."""

    def __init__(self, shard: bool = False, across_ranks: bool = True):
        self.shard, self.across_ranks = shard, across_ranks

    def prepare(self, model: torch.nn.Module) -> torch.nn.Module:
        if not dist.is_initialized():
            return model
        if not self.shard:
            return torch.nn.parallel.DistributedDataParallel(model)
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.fsdp import fully_shard

        mesh = init_device_mesh(next(model.parameters()).device.type, (dist.get_world_size(),))
        for layer in model.model.layers:
            fully_shard(layer, mesh=mesh)
        return fully_shard(model, mesh=mesh)

    def step(self, model, optimizer, microbatches) -> float:
        world = dist.get_world_size() if dist.is_initialized() else 1
        count = sum((batch["labels"][:, 1:] != IGNORE_INDEX).sum() for batch in microbatches)
        if self.across_ranks and world > 1:
            dist.all_reduce(count)
        scale = (world if self.across_ranks else 1) / max(int(count), 1)
        total = torch.zeros((), dtype=torch.float64, device=count.device)
        for batch in microbatches:
            logits = model(input_ids=batch["input_ids"], attention_mask=batch.get("attention_mask"),
                           position_ids=batch.get("position_ids"), use_cache=False).logits
            loss = F.cross_entropy(logits[:, :-1].flatten(0, 1).float(), batch["labels"][:, 1:].flatten(),
                                   ignore_index=IGNORE_INDEX, reduction="sum")
            (loss * scale).backward()
            total += loss.detach()
        logged = total * scale / world
        if world > 1:
            dist.all_reduce(logged)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return float(logged)


PER_TOKEN = PerTokenLoop()
SHARDED = PerTokenLoop(shard=True)
RANK_LOCAL = PerTokenLoop(across_ranks=False)
