"""torchtune 0.6.1's full-finetune recipe, ``FullFinetuneRecipeDistributed.train()``, run as shipped for one
accumulation window per ``step`` (docs/causal-lm.md, The field's own loops, torchtune).

The recipe lives in the wheel's ``recipes/full_finetune_distributed.py``; ``recipes/__init__.py`` raises
``ModuleNotFoundError`` on import ("The torchtune recipes directory isn't a package"), so the file is loaded by path
under another module name (its own imports are torchtune's). The recipe's ``__init__`` calls
``init_process_group`` (a second group cannot be made inside the launch's) and ``setup(cfg)`` needs checkpoint,
tokenizer and dataset files, so the recipe object is made with ``__new__`` and given what ``setup`` would have
built: the model sharded by torchtune's own ``training.shard_model`` (FSDP2 ``fully_shard`` on each decoder layer,
then the root, as ``_setup_model`` does), the harness's optimizer, the loss every shipped llama3 full-finetune
config names (``CEWithChunkedOutputLoss``, with ``model.set_num_output_chunks`` as ``setup`` calls it), the window's
microbatches as its dataloader, and torchtune's ``DummyProfiler``, with no checkpoint client or metric logger.
``train()`` then runs one epoch of ``max_steps_per_epoch=1``: its count (778-781), shift (789-794), loss times count
(802), backward (818), all-reduced count and ``scale_grads(world_size / num_tokens)`` (821-829) and step (838) are
the recipe's own. The logged loss is the one the recipe writes into its progress bar (``loss_to_log``, 848-851).

On a CPU, ``train()``'s first line, ``training.cleanup_before_training()`` (torchtune/training/memory.py:51-52),
calls ``torch.cpu.empty_cache()`` and ``torch.cpu.reset_peak_memory_stats()``, which torch's CPU namespace lacks:
both are made no-ops where missing. The model is torchtune's own ``TransformerDecoder`` at a tiny config
(:func:`tiny_llama3`), which the oracle copies in float64; packed rows come with the positions and the block-causal
mask torchtune's packed collate makes (:func:`packed_mask`).
"""

from __future__ import annotations

import contextlib
import importlib.util
import re
from pathlib import Path

import torch

from oracle.causal_lm import seeded
from parity.training.causal.drivers.libraries.common import rank, swapped, world

RECIPE = "full_finetune_distributed"
#: What had to change to run the recipe here (the verdict says it).
PATCHED = (
    "recipe made with __new__ (its __init__ makes a process group; setup(cfg) reads checkpoint, tokenizer and "
    "dataset files): the window's microbatches are its dataloader, no checkpoint is saved, no metric logged",
)


def load_recipe(name: str = RECIPE):
    """The recipe module, loaded from the wheel's file (``recipes`` is not importable as a package)."""
    import torchtune

    path = Path(torchtune.__file__).parent.parent / "recipes" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"parity_torchtune_recipe_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def cpu_shims() -> list[str]:
    """``torch.cpu.empty_cache`` and ``reset_peak_memory_stats`` as no-ops where torch lacks them."""
    made = []
    for name in ("empty_cache", "reset_peak_memory_stats"):
        if not hasattr(torch.cpu, name):
            setattr(torch.cpu, name, lambda *_args, **_kwargs: None)
        if getattr(torch.cpu, name).__module__ == __name__:
            made.append(f"torch.cpu.{name}: a no-op (torch lacks it; torchtune/training/memory.py:51-52 calls it)")
    return made


class _Sampler:
    def set_epoch(self, epoch: int) -> None:
        pass


class _Window:
    """What ``train()`` reads of its ``StatefulDataLoader``: iteration, ``len``, ``.sampler.set_epoch``,
    ``.state_dict()``."""

    def __init__(self, batches: list[dict]):
        self.batches, self.sampler = batches, _Sampler()

    def __iter__(self):
        return iter([dict(batch) for batch in self.batches])

    def __len__(self) -> int:
        return len(self.batches)

    def state_dict(self) -> dict:
        return {}


class _Nothing:
    """The checkpoint client and metric logger: nothing saved, nothing logged."""

    def save_checkpoint(self, *_args, **_kwargs) -> None:
        pass

    def log_dict(self, *_args, **_kwargs) -> None:
        pass

    def close(self) -> None:
        pass


def tiny_llama3(seed: int, dtype: torch.dtype) -> torch.nn.Module:
    """torchtune's own ``TransformerDecoder`` from its ``llama3`` builder at the size of the oracle's tiny Llama (two
    layers, two heads, one key-value head, the rows' vocabulary, an untied head), its weights drawn from ``seed``
    (the loop's ``model_builder``)."""
    from torchtune.models.llama3 import llama3

    model = llama3(vocab_size=32, num_layers=2, num_heads=2, num_kv_heads=1, embed_dim=16, max_seq_len=64,
                   intermediate_dim=32)
    return seeded(model, seed, dtype)


def packed_mask(positions: torch.Tensor):
    """The mask torchtune's packed collate (``torchtune.data.padded_collate_packed``) hands the model with packed rows:
    its own ``packed_block_causal_mask`` over each row's sequence lengths, a new sequence wherever the positions
    restart (the padding one more, as torchtune packs it)."""
    from torchtune.modules.attention_utils import packed_block_causal_mask

    seq_lens = []
    for row in positions.tolist():
        starts = [i for i, position in enumerate(row) if position == 0] + [len(row)]
        seq_lens.append(torch.tensor([end - start for start, end in zip(starts, starts[1:])]))
    return packed_block_causal_mask(seq_lens=seq_lens)


def _is_layer(name: str, module: torch.nn.Module) -> bool:
    from torchtune.modules import TransformerSelfAttentionLayer

    return isinstance(module, TransformerSelfAttentionLayer) or re.fullmatch(r"(.*\.)?layers\.\d+", name) is not None


class TorchtuneRecipeLoop:
    """torchtune's recipe, one window per call. It always all-reduces its count over the ranks (821-822), so it
    follows the count over every rank only: ``supports`` says so, and a case asking each rank's own is declined."""

    supports = {"average_tokens_across_devices": (True,)}
    model_builder = staticmethod(tiny_llama3)

    def prepare(self, model: torch.nn.Module, *, settings) -> torch.nn.Module:
        from torchtune import training
        from torchtune.modules.loss import CEWithChunkedOutputLoss

        self.recipe, self.loss, self.steps = load_recipe(), CEWithChunkedOutputLoss(), 0
        training.shard_model(model, [_is_layer], cpu_offload=False, reshard_after_forward=True)
        model.set_num_output_chunks(self.loss.num_output_chunks)
        model.patched = [*PATCHED, *(cpu_shims() if settings.device == "cpu" else ())]
        return model

    def step(self, model, optimizer, microbatches, *, settings) -> float:
        from torchtune import training

        recipe_class = next(v for k, v in vars(self.recipe).items() if k.startswith("FullFinetuneRecipe"))
        recipe = recipe_class.__new__(recipe_class)
        rows = max(batch["input_ids"].shape[0] for batch in microbatches)
        recipe.__dict__.update(
            _device=torch.device(settings.device), _dtype=next(model.parameters()).dtype,
            world_size=world(), rank=rank(), _is_rank_zero=rank() == 0, _optimizer_in_bwd=False,
            _gradient_accumulation_steps=len(microbatches), _clip_grad_norm=None, epochs_run=0, total_epochs=1,
            max_steps_per_epoch=1, _steps_per_epoch=1, global_step=self.steps, _compile=False, seed=0,
            _loss_fn=self.loss, _model=model, _optimizer=optimizer, _lr_scheduler=None, _log_every_n_steps=1,
            _log_peak_memory_stats=False, _metric_logger=_Nothing(), _checkpoint_client=_Nothing(),
            _checkpointer=_Nothing(), _profiler=training.DummyProfiler(), profiler_profile_memory=False,
            activations_handling_ctx=contextlib.nullcontext(),
            ignore_labels_cache=torch.full((rows, 1), self.loss.ignore_index, device=settings.device),
            _dataloader=_Window([{"tokens": batch["input_ids"], "labels": batch["labels"],
                                  **({"input_pos": batch["position_ids"], "mask": packed_mask(batch["position_ids"])}
                                     if "position_ids" in batch else {})}
                                 for batch in microbatches]),
        )
        described: list[str] = []
        shipped = self.recipe.tqdm

        class Bar(shipped):  # the recipe's own progress bar, its description kept: "epoch|step|Loss: loss_to_log"
            def set_description(self, desc=None, refresh=True):
                described.append(desc)
                return super().set_description(desc, refresh)

        with swapped(self.recipe, tqdm=Bar):
            recipe.train()
        self.steps += 1
        return float(described[-1].split("Loss: ")[-1]) if described else float("nan")


#: The target ``torchtune:full-finetune`` (parity/targets/catalogue.py).
FULL_FINETUNE = TorchtuneRecipeLoop()
