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
    undoes that): torchtune's ``world_size / num_tokens``; told ``average_tokens_across_devices=False`` (its
    ``settings``), each rank its own count, as torchtitan's rule. ``across_ranks=False`` is the twin: each rank divides
    by its own count whatever it is told, and the ranks' gradients are averaged."""

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

    def step(self, model, optimizer, microbatches, *, settings=None) -> float:
        """``settings`` (parity's ``LoopSettings``) says which count the case asks for; the twin keeps its own."""
        world = dist.get_world_size() if dist.is_initialized() else 1
        across = self.across_ranks and (settings is None or settings.average_tokens_across_devices)
        count = sum((batch["labels"][:, 1:] != IGNORE_INDEX).sum() for batch in microbatches)
        if across and world > 1:
            dist.all_reduce(count)
        scale = (world if across else 1) / max(int(count), 1)
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


# --- planted twins for the diagnosis (docs/causal-lm.md, Naming the objective): one rank, no process group ---------


class WeightedLoop:
    """One rank's loop: each microbatch's token-loss sum (after the shift, on the labels as served) times
    ``weight(g, after, before)``, its backward, then one step; ``after``/``before`` are every microbatch's labels
    != -100 counted after the shift and before it. ``positions=False`` plants a forward that drops the
    ``position_ids``, so the documents of a packed row attend to each other. ``logs_means=True`` logs each
    microbatch's term through its own mean times its count, as torchtune's recipe does: the same number, but 0/0 = NaN
    where a microbatch supervises nothing, the gradient untouched. The correct twin weighs every microbatch by
    ``1 / sum(after)``."""

    def __init__(self, weight, positions: bool = True, logs_means: bool = False):
        self.weight, self.positions, self.logs_means = weight, positions, logs_means

    def prepare(self, model: torch.nn.Module) -> torch.nn.Module:
        return model

    def step(self, model, optimizer, microbatches, *, settings=None) -> float:
        after = [int((batch["labels"][:, 1:] != IGNORE_INDEX).sum()) for batch in microbatches]
        before = [int((batch["labels"] != IGNORE_INDEX).sum()) for batch in microbatches]
        logged = 0.0
        for g, batch in enumerate(microbatches):
            logits = self.logits(model, batch)
            loss = F.cross_entropy(logits[:, :-1].flatten(0, 1).float(), batch["labels"][:, 1:].flatten(),
                                   ignore_index=IGNORE_INDEX, reduction="sum") * self.weight(g, after, before)
            loss.backward()
            if self.logs_means:  # the microbatch's mean (NaN where it supervises nothing) times its count
                term = float(loss.detach()) / self.weight(g, after, before)
                logged += (term / after[g] if after[g] else float("nan")) * after[g] * self.weight(g, after, before)
            else:
                logged += float(loss.detach())
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return logged

    def logits(self, model, batch: dict) -> torch.Tensor:
        return model(input_ids=batch["input_ids"], attention_mask=batch.get("attention_mask"),
                     position_ids=batch.get("position_ids") if self.positions else None, use_cache=False).logits


class MicrobatchMeanLoop(WeightedLoop):
    """Each microbatch's own mean (``reduction="mean"``, NaN where it supervises nothing: 0/0), averaged over the
    window: transformers before 4.46, written without a guard."""

    def __init__(self):
        super().__init__(lambda g, after, before: 1 / (len(after) * after[g]) if after[g] else float("nan"))


#: The window rule: the window's sum over its count after the shift.
WINDOW = WeightedLoop(lambda g, after, before: 1 / max(sum(after), 1))
#: transformers 5.5 to 5.9: the count taken before the shift, on the labels as served.
BEFORE_SHIFT = WeightedLoop(lambda g, after, before: 1 / max(sum(before), 1))
#: The window rule, but the forward drops ``position_ids``: a packed row's documents attend across.
NO_POSITIONS = WeightedLoop(lambda g, after, before: 1 / max(sum(after), 1), positions=False)
#: The window rule in every gradient, its logged loss through each microbatch's own mean: NaN where one supervises
#: nothing (torchtune's recipe logs so, ce_chunked_output_loss.py:83, while its gradients keep the rule).
LOGS_MEANS = WeightedLoop(lambda g, after, before: 1 / max(sum(after), 1), logs_means=True)
#: torchtune's rule: each microbatch's after-shift mean times its before-shift count, over the window's before-shift count.
TORCHTUNE_MEAN = WeightedLoop(lambda g, after, before: before[g] / (max(after[g], 1) * max(sum(before), 1)))
MICROBATCH_MEAN = MicrobatchMeanLoop()
#: A rule outside the known list: the window rule with the window's first microbatch weighed half again.
FIRST_HALF_AGAIN = WeightedLoop(lambda g, after, before: (1.5 if g == 0 else 1.0) / max(sum(after), 1))


# --- a loop that trains a model class of its own (as litgpt's and torchtune's do), one rank -----------------------


class CumulativeLM(torch.nn.Module):
    """A causal LM of no library's: each position's logits from the mean of the embeddings up to it, called as
    ``model(ids) -> logits``, as litgpt's ``GPT`` and torchtune's ``TransformerDecoder`` are."""

    def __init__(self, vocab_size: int = 32, width: int = 8):
        super().__init__()
        self.embed, self.head = torch.nn.Embedding(vocab_size, width), torch.nn.Linear(width, vocab_size)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        steps = torch.arange(1, ids.shape[1] + 1, device=ids.device)[:, None]
        return self.head(torch.tanh(self.embed(ids).cumsum(dim=1) / steps))


def cumulative_lm(seed: int, dtype: torch.dtype) -> CumulativeLM:
    """The loop's ``model_builder``: the same weights from ``seed`` in every dtype."""
    from oracle.causal_lm import seeded

    return seeded(CumulativeLM(), seed, dtype)


class OwnModelLoop(WeightedLoop):
    """:class:`WeightedLoop` on a :class:`CumulativeLM` of its own, which takes the ids alone (one document a row)."""

    model_builder = staticmethod(cumulative_lm)

    def logits(self, model, batch: dict) -> torch.Tensor:
        return model(batch["input_ids"])


#: The window rule on a model of the loop's own.
OWN_MODEL = OwnModelLoop(lambda g, after, before: 1 / max(sum(after), 1))
#: Each microbatch's own mean, averaged, on a model of the loop's own.
OWN_MODEL_MEANS = OwnModelLoop(lambda g, after, before: 1 / (len(after) * max(after[g], 1)))


class RaisingLoop(WeightedLoop):
    """The window rule's loop that raises once its optimizer has stepped, as torchtitan's step does on a window that
    supervises nothing: a crash of the target's, never a harness error."""

    def step(self, model, optimizer, microbatches, *, settings=None) -> float:
        super().step(model, optimizer, microbatches, settings=settings)
        raise RuntimeError("Loss is not finite")


RAISES = RaisingLoop(lambda g, after, before: 1 / max(sum(after), 1))
