"""litgpt 0.5.13's full finetune, ``litgpt.finetune.full.fit``, as shipped: one accumulation window per ``step``
(docs/causal-lm.md, The field's own loops, litgpt).

``fit`` is called whole on a Lightning ``Fabric``; it runs the forward, litgpt's own ``chunked_cross_entropy`` on the
shifted logits and targets (full.py:282-284), ``fabric.backward(loss / gradient_accumulation_iters)`` (285) under
``no_backward_sync`` while accumulating, then ``optimizer.step()`` once (289). Three names of
``litgpt.finetune.full`` are swapped for the call and put back, none on the training step's path: ``Tokenizer``
(full.py:226 reads tokenizer files), ``validate`` (full.py:247, the "Verifying settings" pass, its result unused) and
``generate_example`` (full.py:328, never reached: ``eval.interval`` lies beyond the run). The batches are made by
litgpt's own SFT collate (``litgpt.data.base.get_sft_collate_fn``) from the window's rows. The model is litgpt's own
``GPT`` at a tiny config (:func:`tiny_gpt`), which the oracle copies in float64.

Ranks: litgpt's ``setup`` picks ``FSDPStrategy`` for several devices (full.py:107-116), but Lightning refuses FSDP on
a CPU (lightning/fabric/connector.py: "FSDP is only available on GPU"), so the loop runs Fabric's ``ddp`` strategy
over the launch's process group: it averages the ranks' gradients as FSDP does. Its buffers are not broadcast (FSDP
does not either): ``fit`` sizes the rotary cache to each rank's own longest row (full.py:230), and DDP's broadcast of
buffers of unequal sizes would abort the ranks. On CUDA the same ``ddp`` is used
(litgpt's FSDP with the harness's optimizer over flat parameters was not tried). ``fit`` calls ``model(input_ids)``
alone (full.py:282): no ``position_ids``, and litgpt's data never packs, so a packed case is declined.

The logged loss: ``fit``'s ``RunningMean`` of its per-microbatch losses (full.py:267, rank-local), read off the loss
function's results and averaged over the ranks by the loop, since ``fit`` reduces nothing.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import torch
import torch.distributed as dist

from oracle.causal_lm import seeded
from parity.training.causal.drivers.libraries.common import swapped, world

#: What had to change to run litgpt's fit here (the verdict says it).
PATCHED = (
    "litgpt.finetune.full.Tokenizer: not read (full.py:226 reads tokenizer files; fit never tokenizes here)",
    "litgpt.finetune.full.validate: skipped (full.py:247, the sanity pass before training; its result is unused)",
    "litgpt.finetune.full.generate_example: never reached (eval.interval beyond the run)",
)
#: Said on two ranks or more, where litgpt's setup would pick FSDP (full.py:107-116).
DDP = ("Fabric strategy 'ddp' without buffer broadcasts instead of litgpt's FSDPStrategy (Lightning refuses FSDP on a "
       "CPU; both average the ranks' gradients, and neither broadcasts the rotary cache each rank sizes to its own "
       "longest row, full.py:230)")


class _NoTokenizer:
    def __init__(self, *_args, **_kwargs):
        pass


#: litgpt's ``GPT`` at the size of the oracle's tiny Llama: its Llama-style blocks (RMSNorm, ``LLaMAMLP``, rotary on
#: every dimension, one key-value head, no biases), the rows' vocabulary, an untied head.
TINY_GPT = dict(name="parity-tiny", block_size=64, vocab_size=32, padded_vocab_size=32, n_layer=2, n_head=2, n_embd=16,
                n_query_groups=1, intermediate_size=32, rotary_percentage=1.0, parallel_residual=False, bias=False,
                norm_class_name="RMSNorm", mlp_class_name="LLaMAMLP")


def tiny_gpt(seed: int, dtype: torch.dtype) -> torch.nn.Module:
    """litgpt's own model class at a tiny config, its weights drawn from ``seed`` (the loop's ``model_builder``)."""
    from litgpt.config import Config
    from litgpt.model import GPT

    return seeded(GPT(Config(**TINY_GPT)), seed, dtype)


def _precision(dtype: str) -> str:
    return {"bfloat16": "bf16-true", "float64": "64-true"}.get(dtype, "32-true")


class LitgptFitLoop:
    """litgpt's ``fit``, one window per call. It counts no supervised token over the ranks, so it follows the count
    over every rank only in the sense that it is never told another; and litgpt never packs rows (its SFT collate
    pads each row, ``litgpt/data/base.py:112-131``, and ``fit`` hands the model no positions, full.py:282), so packed rows
    are no input of its: ``supports`` says both."""

    supports = {"average_tokens_across_devices": (True,), "packed": (False,)}
    model_builder = staticmethod(tiny_gpt)

    def prepare(self, model: torch.nn.Module, *, settings) -> torch.nn.Module:
        import lightning
        from lightning.fabric.strategies import DDPStrategy

        self.world, self.steps = world(), 0
        accelerator = "cuda" if settings.device.startswith("cuda") else "cpu"
        self.fabric = lightning.Fabric(accelerator=accelerator, devices=self.world,
                                       strategy=DDPStrategy(broadcast_buffers=False) if self.world > 1 else "auto",
                                       precision=_precision(settings.dtype))
        self.fabric.launch()
        wrapped = self.fabric.setup(model)
        wrapped.patched = [*PATCHED, DDP] if self.world > 1 else list(PATCHED)
        return wrapped

    def step(self, model, optimizer, microbatches, *, settings) -> float:
        import litgpt.finetune.full as full
        from litgpt.args import EvalArgs, TrainArgs
        from litgpt.data.base import get_sft_collate_fn

        rows, batches = [], []
        for batch in microbatches:  # each microbatch's rows unpadded, litgpt's collate pads them again
            kept = batch.get("attention_mask")
            batches.append([])
            for b, (ids, labels) in enumerate(zip(batch["input_ids"].cpu(), batch["labels"].cpu())):
                n = int(kept[b].sum()) if kept is not None else len(ids)
                batches[-1].append(len(rows))
                rows.append({"input_ids": ids[:n], "labels": labels[:n],
                             "token_counts": {"raw": n, "raw_plus_prompt_template": n}})
        collate = get_sft_collate_fn(pad_id=0, ignore_index=-100)
        train_loader = torch.utils.data.DataLoader(rows, batch_sampler=batches, collate_fn=collate)
        val_loader = torch.utils.data.DataLoader(rows[:1], batch_size=1, collate_fn=collate)
        per_microbatch = max(len(b) for b in batches)
        # global_batch_size // (devices * micro_batch_size) = the window's microbatches (litgpt/args.py:56-66)
        train = TrainArgs(global_batch_size=per_microbatch * len(batches) * self.world,
                          micro_batch_size=per_microbatch, max_steps=self.steps + 1, epochs=1 << 20,
                          log_interval=1 << 30, save_interval=None, lr_warmup_steps=0)
        evaluation = EvalArgs(interval=1 << 30, initial_validation=False, final_validation=False)
        state = {"model": model, "optimizer": optimizer, "iter_num": 0, "step_count": self.steps,
                 "scheduler": torch.optim.lr_scheduler.LambdaLR(optimizer, lambda _: 1.0)}
        losses: list[torch.Tensor] = []
        shipped = full.chunked_cross_entropy

        def observed(*args, **kwargs):  # litgpt's own loss, its result kept for the logged value
            loss = shipped(*args, **kwargs)
            losses.append(loss.detach().double())
            return loss

        with tempfile.TemporaryDirectory() as tmp, swapped(
                full, Tokenizer=_NoTokenizer, validate=lambda *a, **k: torch.tensor(0.0),
                generate_example=lambda *a, **k: None, chunked_cross_entropy=observed):
            full.fit(self.fabric, state, train_loader, val_loader, self.world, False, Path(tmp), Path(tmp), train,
                     evaluation, data=None, num_nodes=1)
        self.steps += 1
        logged = torch.stack(losses).mean().to(settings.device)  # the RunningMean fit logs on this rank
        if self.world > 1:
            dist.all_reduce(logged)
            logged /= self.world
        return float(logged)


#: The target ``litgpt:fit`` (parity/targets/catalogue.py).
FIT = LitgptFitLoop()

