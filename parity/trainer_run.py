"""Whole training runs: a target's ``transformers.Trainer`` beside the oracle's full-window SGD.

A run trains the tiny model with ``Trainer.train()`` (plain SGD, constant learning rate, no
clipping), records the gradients and parameters of every optimizer step through a callback, and
keeps the draws the trainer realized. The oracle then replays those draws: one reference step per
window (over all ranks' rows), and the single-batch loss for evaluation.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import torch
from transformers import PrinterCallback, TrainerCallback, TrainingArguments

from oracle.nemotron_diffusion import IGNORE_INDEX, TINY_CONFIG
from impl.trainer import RealizedDraw
from oracle.window_reference import StepResult, single_batch_loss, sgd_step
from parity.compare import Comparison, compare_tensor
from parity.window_cases import tiny_model
from parity.window_run import compare_steps

PAD_ID = 0
DTYPES = {"float32": torch.float32, "float64": torch.float64}


@dataclass(frozen=True)
class TrainerCase:
    """Everything a training run depends on; plain values, so a DDP worker can receive it as JSON."""

    examples_per_rank: int = 5
    accumulation: int = 2
    max_length: int = 10
    data_seed: int = 0
    noise_seed: int = 1  # with the defaults, every window of the 2, 2, 1 run realizes some mask
    model_seed: int = 0
    lr: float = 0.01
    dtype: str = "float32"
    device: str = "cpu"
    average_tokens_across_devices: bool = True
    #: ranks whose rows are all prompt, so their windows realize no mask at all
    empty_ranks: tuple[int, ...] = ()
    evaluate: bool = True

    def __post_init__(self):
        if self.device not in ("cpu", "cuda"):
            raise ValueError(f"device must be one of cpu, cuda; got {self.device!r}")
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {', '.join(DTYPES)}; got {self.dtype!r}")
        if self.examples_per_rank < 1 or self.accumulation < 1 or self.max_length < 2:
            raise ValueError("examples_per_rank and accumulation must be >= 1, max_length >= 2")

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> TrainerCase:
        return cls(**{**data, "empty_ranks": tuple(data["empty_ranks"])})


def training_examples(case: TrainerCase, world_size: int = 1) -> list[dict[str, list[int]]]:
    """Prompt-answer rows of varied length; row ``i`` is served to rank ``i % world_size``.

    The sequential sampler and accelerate's round-robin sharding make that assignment; the
    recorded draws, not this assumption, are what the oracle replays.
    """
    generator = torch.Generator().manual_seed(case.data_seed)
    examples = []
    for i in range(case.examples_per_rank * world_size):
        length = int(torch.randint(2, case.max_length + 1, (), generator=generator))
        ids = torch.randint(1, TINY_CONFIG["mask_token_id"], (length,), generator=generator)
        prompt = length if i % world_size in case.empty_ranks else int(torch.randint(0, length, (), generator=generator))
        labels = torch.cat([torch.full((prompt,), IGNORE_INDEX), ids[prompt:]])
        examples.append({"input_ids": ids.tolist(), "labels": labels.tolist()})
    return examples


def pad_collate(examples: Sequence[dict[str, list[int]]]) -> dict[str, torch.Tensor]:
    """Right padding to the longest row, an attention mask, and unsupervised labels on the padding."""
    longest = max(len(example["input_ids"]) for example in examples)

    def padded(key: str, fill: int) -> torch.Tensor:
        return torch.tensor([example[key] + [fill] * (longest - len(example[key])) for example in examples])

    return {
        "input_ids": padded("input_ids", PAD_ID),
        "attention_mask": torch.tensor([[1] * len(e["input_ids"]) + [0] * (longest - len(e["input_ids"])) for e in examples]),
        "labels": padded("labels", IGNORE_INDEX),
    }


class StepRecorder(TrainerCallback):
    """Gradients just before each optimizer step, parameters just after it."""

    def __init__(self, model: torch.nn.Module):
        self.model = model
        self.grads: list[dict[str, torch.Tensor | None]] = []
        self.params: list[dict[str, torch.Tensor]] = []

    def on_pre_optimizer_step(self, args, state, control, **kwargs):
        self.grads.append(
            {n: None if p.grad is None else p.grad.detach().cpu().clone() for n, p in self.model.named_parameters()}
        )

    def on_optimizer_step(self, args, state, control, **kwargs):
        self.params.append({n: p.detach().cpu().clone() for n, p in self.model.named_parameters()})


@dataclass
class TrainerRecord:
    """What one rank's run produced."""

    steps: list[StepResult]
    train_draws: list[list[RealizedDraw]]  # what the oracle replays: same fields as oracle's Draw
    eval_loss: float | None
    eval_draws: list[RealizedDraw] = field(default_factory=list)


def training_arguments(case: TrainerCase, output_dir: str, distributed: bool = False) -> TrainingArguments:
    return TrainingArguments(
        output_dir=output_dir,
        per_device_train_batch_size=1,
        per_device_eval_batch_size=case.examples_per_rank,
        gradient_accumulation_steps=case.accumulation,
        num_train_epochs=1,
        learning_rate=case.lr,
        optim="sgd",
        lr_scheduler_type="constant",
        weight_decay=0.0,
        max_grad_norm=0.0,
        logging_steps=1,
        save_strategy="no",
        eval_strategy="no",
        report_to="none",
        disable_tqdm=True,
        use_cpu=case.device == "cpu",
        seed=case.data_seed,
        train_sampling_strategy="sequential",
        remove_unused_columns=False,
        dataloader_num_workers=0,
        average_tokens_across_devices=case.average_tokens_across_devices,
        ddp_backend=("nccl" if case.device == "cuda" else "gloo") if distributed else None,
    )


def run_trainer(trainer_class, case: TrainerCase, output_dir: str, world_size: int = 1) -> TrainerRecord:
    """``Trainer.train()`` (and ``evaluate()``) on this rank's share of the case."""
    model = tiny_model(case.model_seed, DTYPES[case.dtype])
    recorder = StepRecorder(model)
    rows = training_examples(case, world_size)
    trainer = trainer_class(
        model=model,
        args=training_arguments(case, output_dir, distributed=world_size > 1),
        train_dataset=rows,
        eval_dataset=rows if case.evaluate else None,
        data_collator=pad_collate,
        callbacks=[recorder],
        noise_seed=case.noise_seed,
    )
    trainer.remove_callback(PrinterCallback)  # the records, not the console, carry the results
    trainer.train()
    eval_loss = trainer.evaluate()["eval_loss"] if case.evaluate else None
    losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    if not len(losses) == len(recorder.grads) == len(recorder.params) == len(trainer.train_draws):
        raise AssertionError(
            f"expected one logged loss, gradient and parameter record per step: {len(losses)} losses, "
            f"{len(recorder.grads)} gradients, {len(recorder.params)} parameters, {len(trainer.train_draws)} windows"
        )
    steps = [
        StepResult(torch.tensor(loss, dtype=torch.float32), grads, params)
        for loss, grads, params in zip(losses, recorder.grads, recorder.params, strict=True)
    ]
    return TrainerRecord(steps, trainer.train_draws, eval_loss, trainer.eval_draws)


def _reference(case: TrainerCase, records: Sequence[TrainerRecord], dtype: torch.dtype, reverse: bool, device: str):
    """The oracle over every rank's rows: step k is window k of all ranks; then its evaluation loss."""
    model = tiny_model(case.model_seed, DTYPES[case.dtype]).to(device, dtype)
    eos = model.config.eos_token_id
    steps = []
    for k in range(len(records[0].train_draws)):
        ranks = [record.train_draws[k][::-1] if reverse else record.train_draws[k] for record in records]
        steps.append(sgd_step(model, ranks, eos, case.lr, rank_local=not case.average_tokens_across_devices))
    with torch.no_grad():
        eval_losses = [
            torch.stack([single_batch_loss(model, draw, eos) for draw in record.eval_draws]).mean()
            for record in records
            if record.eval_draws
        ]
    return steps, (torch.stack(eval_losses).mean() if eval_losses else None)


def golden_run(case: TrainerCase, records: Sequence[TrainerRecord]) -> tuple[list[StepResult], torch.Tensor | None]:
    """The oracle in float64 on the CPU: its steps and its evaluation loss."""
    return _reference(case, records, torch.float64, reverse=False, device="cpu")


def trainer_comparisons(case: TrainerCase, records: Sequence[TrainerRecord]) -> list[Comparison]:
    """Every rank's steps and evaluation loss against the oracle's, each within its budget.

    The logged losses pass through the Trainer's float32 accumulator, so they are held to the
    float32 budget whatever the working dtype.
    """
    dtype = DTYPES[case.dtype]
    golden_steps, golden_eval = golden_run(case, records)
    refs = [_reference(case, records, dtype, reverse, case.device) for reverse in (False, True)]
    comparisons = []
    for rank, record in enumerate(records):
        rank_comparisons = compare_steps(record.steps, [steps for steps, _ in refs], golden_steps)
        for comparison in rank_comparisons:
            comparisons.append(_on_rank(comparison, rank, len(records)))
        if record.eval_loss is not None and golden_eval is not None:
            out = torch.tensor(record.eval_loss, dtype=torch.float32)
            eval_refs = [ref_eval.to("cpu", torch.float32) for _, ref_eval in refs]
            comparisons.append(_on_rank(compare_tensor("eval loss", out, eval_refs, golden_eval), rank, len(records)))
    return comparisons


def _on_rank(comparison: Comparison, rank: int, world_size: int) -> Comparison:
    if world_size == 1:
        return comparison
    return Comparison(**{**asdict(comparison), "name": f"rank {rank} {comparison.name}"})
