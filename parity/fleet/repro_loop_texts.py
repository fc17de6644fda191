"""The code of the reproducers written for the field's own loops (:mod:`parity.fleet.repro_loops`): per library, the
imports, the helpers that build its tiny model and run its own training code on ``WINDOW``, each defect's test, and
the ``conftest.py`` that makes the library follow the window rule for the check on a fix.

Plain text, never formatted: the writer puts the header docstring, ``VOCAB`` and ``WINDOW`` between the imports and
the helpers, which read them at call time. Everything here is what a maintainer reads, so it says why in the
library's own terms and imports only the library, what it depends on, torch and pytest.
"""

from __future__ import annotations

#: The window rule and the helpers both libraries' files share (the rule in float64, the counts it divides by).
RULE = '''

def counts(shifted: bool = True) -> list[int]:
    """Each microbatch's supervised labels after the shift (a row's first label is never predicted) or before it."""
    return [sum(label != -100 for _, labels in microbatch for label in labels[1 if shifted else 0:])
            for microbatch in WINDOW]


def window_rule(model):
    """(loss, gradients) of the window rule, in float64: every row's summed next-token cross-entropy over its
    supervised positions after the shift, divided once by the window's count after the shift (none: nothing)."""
    model = copy.deepcopy(model).double()
    total = sum(torch.nn.functional.cross_entropy(model(torch.tensor([ids]))[0, :-1], torch.tensor(labels[1:]),
                                                  ignore_index=-100, reduction="sum")
                for microbatch in WINDOW for ids, labels in microbatch)
    loss = total / max(sum(counts()), 1)
    loss.backward()
    return loss.item(), [parameter.grad for parameter in model.parameters()]


def off(handed, expected) -> float:
    """How far the gradients handed to the optimizer are from the rule's, relative to the rule's largest entry."""
    return (max((got - want).abs().max().item() for got, want in zip(handed, expected, strict=True))
            / max(want.abs().max().item() for want in expected))
'''

LITGPT_IMPORTS = '''
import copy

import lightning
import litgpt.finetune.full as full
import torch
from litgpt import GPT, Config
from litgpt.args import EvalArgs, TrainArgs
from litgpt.data.base import get_sft_collate_fn
'''

LITGPT = RULE + '''

def fit(tmp_path, monkeypatch):
    """``WINDOW`` through litgpt's own ``fit`` on a Fabric, as ``litgpt finetune_full`` runs it on one device:
    (the gradients handed to ``optimizer.step()``, the window rule's)."""
    torch.manual_seed(0)  # litgpt's own GPT at a tiny config, its weights drawn from seed 0
    model = GPT(Config(block_size=64, vocab_size=VOCAB, padded_vocab_size=VOCAB, n_layer=1, n_head=2, n_embd=8))
    _, expected = window_rule(model)
    # fit's calls off the training step, swapped for this run: full.py:226 reads tokenizer files, 247 runs a sanity
    # validation whose result is unused, and generate_example is never reached (eval.interval lies beyond the run)
    monkeypatch.setattr(full, "Tokenizer", lambda *args: None)
    monkeypatch.setattr(full, "validate", lambda *args, **kwargs: torch.tensor(0.0))
    monkeypatch.setattr(full, "generate_example", lambda *args, **kwargs: None)
    fabric = lightning.Fabric(accelerator="cpu", devices=1, precision="32-true")
    model = fabric.setup(model)
    optimizer = fabric.setup_optimizers(torch.optim.SGD(model.parameters(), lr=1.0))
    handed = []
    optimizer.optimizer.register_step_pre_hook(lambda *_: handed.extend(p.grad.double() for p in model.parameters()))
    rows = [{"input_ids": torch.tensor(ids), "labels": torch.tensor(labels),
             "token_counts": {"raw": len(ids), "raw_plus_prompt_template": len(ids)}}
            for microbatch in WINDOW for ids, labels in microbatch]
    loader = torch.utils.data.DataLoader(rows, batch_size=len(WINDOW[0]), collate_fn=get_sft_collate_fn())
    # global_batch_size // micro_batch_size microbatches a step (litgpt/args.py:56-66): the window's
    train = TrainArgs(global_batch_size=len(rows), micro_batch_size=len(WINDOW[0]), max_steps=1, epochs=1,
                      log_interval=1 << 30, save_interval=None, lr_warmup_steps=0)
    evaluation = EvalArgs(interval=1 << 30, initial_validation=False, final_validation=False)
    state = {"model": model, "optimizer": optimizer, "iter_num": 0, "step_count": 0,
             "scheduler": torch.optim.lr_scheduler.LambdaLR(optimizer, lambda _: 1.0)}
    full.fit(fabric, state, loader, loader, 1, False, tmp_path, tmp_path, train, evaluation, data=None)
    return handed, expected
'''

LITGPT_PER_MICROBATCH = '''

def test_fit_divides_the_window_once_by_its_count(tmp_path, monkeypatch):
    handed, expected = fit(tmp_path, monkeypatch)
    n, worst = counts(), off(handed, expected)
    assert worst < 1e-4, (
        f"fit weighs each microbatch by 1 / (its own supervised count x gradient_accumulation_iters) "
        f"(litgpt/finetune/full.py:284-285, chunked_cross_entropy's mean at litgpt/utils.py:351): with counts {n} "
        f"that is {[round(1 / (len(n) * max(c, 1)), 4) for c in n]} per supervised token where the window rule "
        f"weighs every one 1/{sum(n)}; the gradient handed to optimizer.step() is off the rule's by {worst:.0%}")
'''

LITGPT_FIXED = '''"""For the check on a fix only: litgpt's loss made the window rule's. Each microbatch's summed cross-entropy over
the window's count, times the accumulation iterations fit then divides it by (litgpt/finetune/full.py:285)."""

import litgpt.finetune.full as full
import pytest
import torch


@pytest.fixture(autouse=True)
def window_rule_loss(request, monkeypatch):
    window = request.module.WINDOW
    count = max(sum(label != -100 for microbatch in window for _, labels in microbatch for label in labels[1:]), 1)

    def summed(logits, targets, chunk_size=128, ignore_index=-100):
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1),
                                                 ignore_index=ignore_index, reduction="sum")
        return loss * len(window) / count

    monkeypatch.setattr(full, "chunked_cross_entropy", summed)
'''

TORCHTUNE_IMPORTS = '''
import contextlib
import copy
import importlib.util
from functools import partial
from pathlib import Path

import torch
import torch.distributed as dist
import torchtune
from torchdata.stateful_dataloader import StatefulDataLoader
from torchdata.stateful_dataloader.sampler import StatefulDistributedSampler
from torchtune import training
from torchtune.data import padded_collate_sft
from torchtune.models.llama3 import llama3
from torchtune.modules.loss import CEWithChunkedOutputLoss

#: The recipe as the wheel ships it, loaded by path: recipes/__init__.py raises on import.
RECIPE = Path(torchtune.__file__).parent.parent / "recipes" / "full_finetune_distributed.py"
'''

TORCHTUNE = RULE + '''

class Kept(list):
    """The recipe's metric logger (what it logs, kept) and checkpoint client (nothing saved)."""

    def log_dict(self, metrics, step):
        self.append(metrics)

    def save_checkpoint(self, **kwargs):
        pass


def train(tmp_path, monkeypatch):
    """``WINDOW`` through the recipe's own ``train()``, one step on one process: (the gradients handed to
    ``optimizer.step()``, the loss it logs, the window rule's loss and gradients)."""
    torch.manual_seed(0)  # torchtune's own llama3 at a tiny size, its weights drawn from seed 0
    model = llama3(vocab_size=VOCAB, num_layers=1, num_heads=2, num_kv_heads=1, embed_dim=16, max_seq_len=64)
    rule = window_rule(model)  # torchtune's RMSNorm computes in float32 whatever the model's dtype
    loss_fn = CEWithChunkedOutputLoss()  # the loss every shipped llama3 full-finetune config names
    model.set_num_output_chunks(loss_fn.num_output_chunks)  # as the recipe's setup does
    for name in ("empty_cache", "reset_peak_memory_stats"):  # training/memory.py:51-52 calls them; torch.cpu lacks them
        monkeypatch.setattr(torch.cpu, name, getattr(torch.cpu, name, lambda: None), raising=False)
    spec = importlib.util.spec_from_file_location("full_finetune_distributed", RECIPE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    optimizer = torch.optim.SGD(model.parameters(), lr=1.0)
    handed, logged = [], Kept()
    optimizer.register_step_pre_hook(lambda *_: handed.extend(p.grad.double() for p in model.parameters()))
    rows = [{"tokens": ids, "labels": labels} for microbatch in WINDOW for ids, labels in microbatch]
    loader = StatefulDataLoader(rows, batch_size=len(WINDOW[0]), collate_fn=partial(padded_collate_sft, padding_idx=0),
                                sampler=StatefulDistributedSampler(rows, num_replicas=1, rank=0, shuffle=False))
    # __init__ makes a process group and setup(cfg) reads checkpoint, tokenizer and dataset files: what they build, given
    recipe = module.FullFinetuneRecipeDistributed.__new__(module.FullFinetuneRecipeDistributed)
    recipe.__dict__.update(
        _device=torch.device("cpu"), world_size=1, _is_rank_zero=True, _optimizer_in_bwd=False, _clip_grad_norm=None,
        _gradient_accumulation_steps=len(WINDOW), epochs_run=0, total_epochs=1, max_steps_per_epoch=1,
        _steps_per_epoch=1, global_step=0, seed=0, _model=model, _optimizer=optimizer, _loss_fn=loss_fn,
        _lr_scheduler=None, _log_every_n_steps=1, _log_peak_memory_stats=False, _metric_logger=logged,
        _checkpoint_client=logged, _profiler=training.DummyProfiler(), profiler_profile_memory=False,
        activations_handling_ctx=contextlib.nullcontext(), _dataloader=loader,
        ignore_labels_cache=torch.full((len(WINDOW[0]), 1), loss_fn.ignore_index))
    dist.init_process_group("gloo", store=dist.FileStore(str(tmp_path / "store"), 1), rank=0, world_size=1)
    try:
        recipe.train()
    finally:
        dist.destroy_process_group()
    return handed, float(logged[-1]["loss"]), *rule
'''

TORCHTUNE_COUNT_BEFORE_THE_SHIFT = '''

def test_each_supervised_token_weighs_one_over_the_window_s_count(tmp_path, monkeypatch):
    handed, _, _, expected = train(tmp_path, monkeypatch)
    after, before, worst = counts(), counts(shifted=False), off(handed, expected)
    assert worst < 1e-4, (
        f"the recipe counts the labels before the shift (recipes/full_finetune_distributed.py:778-781) but its loss "
        f"is their mean after it (789-802): a microbatch weighs (before / after) / {sum(before)} per supervised "
        f"token, with counts {after} after the shift and {before} before that is "
        f"{[round(b / a / sum(before), 4) for a, b in zip(after, before)]} where the window rule weighs every one "
        f"1/{sum(after)}; the gradient handed to optimizer.step() is off the rule's by {worst:.0%}")
'''

TORCHTUNE_EMPTY_MICROBATCH = '''

def test_the_logged_loss_is_the_window_s(tmp_path, monkeypatch):
    _, logged, loss, _ = train(tmp_path, monkeypatch)
    assert abs(logged - loss) <= 1e-4 * abs(loss), (
        f"a microbatch that supervises nothing after the shift (counts {counts()}) has the mean 0/0 "
        f"(torchtune/modules/loss/ce_chunked_output_loss.py:83), still NaN times its count 0 in running_loss "
        f"(recipes/full_finetune_distributed.py:802-807), so the loss logged (848) is {logged} where the window "
        f"rule's is {loss:.6f}")
'''

TORCHTUNE_EMPTY_WINDOW = '''

def test_a_window_that_supervises_nothing_steps_with_a_zero_gradient(tmp_path, monkeypatch):
    handed, _, _, expected = train(tmp_path, monkeypatch)
    nan = sum(int(got.isnan().sum()) for got in handed)
    assert all(torch.equal(got, want) for got, want in zip(handed, expected, strict=True)), (
        f"no label of the window is supervised (counts {counts(shifted=False)} before the shift): the recipe scales "
        f"every gradient by world_size / num_tokens = 1/0 (recipes/full_finetune_distributed.py:829, "
        f"torchtune/training/_grad_scaler.py:31), so {nan} of the {sum(got.numel() for got in handed)} gradient "
        f"entries handed to optimizer.step() are NaN where the window rule's gradient is 0")
'''

TORCHTUNE_FIXED = '''"""For the check on a fix only: torchtune's recipe made to follow the window rule. A copy of the recipe counts the
labels after the shift (778-781) and guards its scale against a window that supervises nothing (829); the loss of a
microbatch that supervises nothing is 0, not 0/0 (ce_chunked_output_loss.py:83)."""

import pytest
from torchtune.modules.loss import CEWithChunkedOutputLoss

FIXES = {
    'batch["labels"] != self._loss_fn.ignore_index': 'batch["labels"][..., 1:] != self._loss_fn.ignore_index',
    "scale_grads(self._model, self.world_size / num_tokens)":
        "scale_grads(self._model, self.world_size / num_tokens.clamp(min=1))",
}


@pytest.fixture(autouse=True)
def fixed_recipe(request, monkeypatch, tmp_path):
    text = request.module.RECIPE.read_text()
    for shipped, fixed in FIXES.items():
        assert shipped in text, f"the recipe no longer reads {shipped!r}"
        text = text.replace(shipped, fixed)
    (tmp_path / "fixed_recipe.py").write_text(text)
    monkeypatch.setattr(request.module, "RECIPE", tmp_path / "fixed_recipe.py")
    shipped_forward = CEWithChunkedOutputLoss.forward

    def forward(self, logits, labels):
        if (labels != self.ignore_index).any():
            return shipped_forward(self, logits, labels)
        return sum(chunk.sum() for chunk in logits) * 0.0

    monkeypatch.setattr(CEWithChunkedOutputLoss, "forward", forward)
'''
