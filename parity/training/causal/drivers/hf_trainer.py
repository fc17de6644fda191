"""A ``transformers.Trainer`` (any subclass, or the plain one with the model's own loss) on a causal-LM case, on
this rank (docs/causal-lm.md, Trainers and their contract per release).

The trainer is built as a user builds one: the tiny causal LM, a dataset, a collator
(:func:`parity.training.causal.drivers.batches.collate_rows`), ``TrainingArguments`` that make one optimizer step
one window of plain SGD (constant rate, no weight decay, no clipping), and it is watched from outside as the
diffusion runs are (``parity.training.observe.RunObserver``: the gradients before each step, the parameters after
it, the batches the collator served). The dataset holds every rank's rows in serving order, sequentially sampled,
and accelerate shards its batches round-robin, so rank ``r`` is served its own; what each rank was actually served
is what its record holds. The logged loss is the Trainer's, averaged over the ranks; the gradients are DDP's,
averaged too.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Sequence

import torch
from transformers import PrinterCallback, Trainer, TrainingArguments

from oracle.causal_lm import Row, tiny_causal_lm
from oracle.window_reference import StepResult
from parity.compare import Finding
from parity.devices import backend, torch_dtype
from parity.safety.bounds import bounded
from parity.safety.crash import describe_raised
from parity.training.causal.drivers.batches import collate_rows
from parity.training.causal.record import CausalCase, CausalRecord
from parity.training.causal.rows import case_rows
from parity.training.observe import RunObserver


def causal_arguments(case: CausalCase, output_dir: str, world_size: int = 1, arguments: type = TrainingArguments,
                     **extra) -> TrainingArguments:
    """One optimizer step per window of ``case.window_size`` microbatches, plain SGD at ``case.lr``, every step logged;
    ``extra`` sets or overrides fields (a trainer's own batching, its arguments class's own fields)."""
    return arguments(**dict(
        output_dir=output_dir,
        per_device_train_batch_size=case.rows_per_microbatch,
        gradient_accumulation_steps=case.window_size,
        max_steps=case.steps,
        learning_rate=case.lr,
        optim="sgd",
        lr_scheduler_type="constant",
        weight_decay=0.0,
        max_grad_norm=0.0,  # no clipping
        logging_steps=1,
        logging_nan_inf_filter=False,
        save_strategy="no",
        report_to="none",
        disable_tqdm=True,
        use_cpu=case.device == "cpu",
        seed=case.model_seed,
        train_sampling_strategy="sequential",
        dataloader_num_workers=0,
        average_tokens_across_devices=case.average_tokens_across_devices,
        ddp_backend=backend(case.device) if world_size > 1 else None,
    ) | extra)


def serving_order(rows: Sequence[Sequence[Sequence[Sequence[Row]]]]) -> list[Row]:
    """``rows[r][k][g]`` flattened as a sequential sampler and accelerate's round-robin shards serve them: window by
    window, microbatch by microbatch, rank by rank."""
    return [row for k in range(len(rows[0])) for g in range(len(rows[0][k])) for rank in rows for row in rank[k][g]]


def steps_of(trainer: Trainer, observer: RunObserver) -> list[StepResult]:
    """Per optimizer step: the logged loss, the gradients before it and the parameters after it."""
    losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    if not len(losses) == len(observer.grads) == len(observer.params):
        raise AssertionError(f"expected one logged loss, gradient and parameter record per step: {len(losses)} losses, "
                             f"{len(observer.grads)} gradients, {len(observer.params)} parameters")
    return [StepResult(torch.tensor(loss, dtype=torch.float64), grads, params)
            for loss, grads, params in zip(losses, observer.grads, observer.params, strict=True)]


def observed_run(case: CausalCase, rank: int, build: Callable, rows_of: Callable) -> CausalRecord:
    """``build(model, observer, output_dir)``'s trainer trained on ``case`` and watched from outside: each training
    microbatch's rows read off what its collator served by ``rows_of(served_batch)``, in the order of the forwards
    (one each). A trainer that raises gives a record with a ``crash`` finding, the steps it did not finish left out."""
    model = tiny_causal_lm(case.model_seed, torch_dtype(case.dtype))
    observer = RunObserver(model)
    findings = []
    with tempfile.TemporaryDirectory(prefix="parity-causal-") as output_dir:
        try:
            trainer = build(model, observer, output_dir)
            trainer.remove_callback(PrinterCallback)  # the observer, not the console, carries the results
            with bounded(f"`{type(trainer).__name__}.train()`"):  # docs/faults.md, Bounds
                trainer.train()
            steps = steps_of(trainer, observer)
        except Exception as error:  # the target raised: a crash finding, not a harness error
            findings.append(Finding("crash", describe_raised(error), rank=rank, phase="train"))
            steps = []
        finally:
            observer.close()
    # a window ends where an optimizer step begins: an epoch's last window may be short, and the next starts afresh
    microbatches = [rows_of(batch) for batch in observer.batches.get("train", [])]
    bounds = [0, *observer.window_ends]
    return CausalRecord([microbatches[a:b] for a, b in zip(bounds, bounds[1:])], steps, findings)


def run_hf_trainer(trainer_class: type[Trainer], case: CausalCase, rank: int = 0, world_size: int = 1,
                   rows: Sequence | None = None) -> CausalRecord:
    """``trainer_class(...).train()`` on ``case`` as rank ``rank`` of ``world_size`` (inside a process group when more
    than one); ``rows[r][k][g]`` defaults to the case's own (:func:`parity.training.causal.rows.case_rows`)."""
    served = serving_order(case_rows(case) if rows is None else rows)

    def build(model, observer: RunObserver, output_dir: str) -> Trainer:
        collate = observer.collator(lambda examples: collate_rows([served[e["row"]] for e in examples], case.packed))
        return trainer_class(model=model, args=causal_arguments(case, output_dir, world_size, remove_unused_columns=False),
                             train_dataset=[{"row": i} for i in range(len(served))], data_collator=collate,
                             callbacks=[observer])

    return observed_run(case, rank, build, lambda batch: [served[e["row"]] for e in batch.examples])
