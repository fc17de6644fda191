"""Driving a trainer target: any masked-diffusion ``transformers.Trainer``, built as a user would build it.

The seam needs nothing but a ``Trainer`` subclass (docs/trainer.md). The harness hands it its own
tiny model, rows and collator, seeds torch's global generator through ``args.seed``, runs
``train()``, ``evaluate()`` and ``prediction_step``, and watches from outside
(``parity.training.observe``). The masks are read off the ids the encoder received and ``p`` is
replayed from the generator timeline (``parity.training.diffusion.drivers.noise_replay``); the oracle then runs on the replayed
draws and judges the run (``parity.training.diffusion.verdict``); ``parity.table.checks.training`` is the property.

Two class attributes of the trainer are read, never required: ``eps`` (the rule is
:func:`eps_declined`) and ``model_contract`` (held to the contract observed, :func:`observed_contract`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import torch
from transformers import PrinterCallback, TrainingArguments

from oracle.nemotron_diffusion import IGNORE_INDEX, TINY_CONFIG
from oracle.window_reference import Draw, StepResult
from parity.cases import PUBLISHED_EPS, TrainerCase
from parity.compare import Finding
from parity.devices import backend, check_dtype_runs_on
from parity.safety.bounds import bounded
from parity.safety.crash import describe_raised
from parity.targets import ConfigDeclined
from parity.training.diffusion.counts import count_problem
from parity.training.diffusion.drivers.noise_replay import replay_noise
from parity.training.diffusion.drivers.window_cases import tiny_model
from parity.training.observe import RunObserver
from parity.training.shipped import as_shipped

PAD_ID = 0
MODEL_CONTRACTS = ("loss-pair", "logits")


# --- the eps rule (docs/trainer.md, What the harness reads) -------------------------------------------


def declares_eps(trainer) -> bool:
    """Whether the trainer's eps can be set per case: a float class attribute ``eps``, or the field of
    its arguments class that its target names (``ShippedTrainer.eps_argument``)."""
    shipped = as_shipped(trainer)
    return shipped.eps_argument is not None or isinstance(getattr(shipped.trainer, "eps", None), float)


def eps_source(trainer) -> str:
    """How the eps a run uses was chosen, as every report and message shows it."""
    shipped = as_shipped(trainer)
    if shipped.eps_argument is not None:
        return f"set on {shipped.arguments.__name__}.{shipped.eps_argument}"
    return "declared by the trainer" if declares_eps(shipped) else f"not declared: the published {PUBLISHED_EPS:g} assumed"


def eps_declined(trainer, case: TrainerCase) -> str | None:
    """Why ``trainer`` cannot run ``case`` (its eps varies, and the trainer declares none); None if it can."""
    if declares_eps(trainer) or case.eps == PUBLISHED_EPS:
        return None
    return (
        f"{as_shipped(trainer).__name__} declares no class attribute eps: the published {PUBLISHED_EPS:g} is assumed, "
        f"so a case at eps={case.eps:g} is skipped"
    )


def inside_eps_domain(trainer, case: TrainerCase) -> TrainerCase:
    """The case at the nearest eps the trainer accepts (its target's ``eps_domain``, default ``(0, 1]``)."""
    return replace(case, eps=as_shipped(trainer).eps_domain.fit(case.eps))


def trainer_for_case(trainer, case: TrainerCase) -> type:
    """The trainer class at the case's ``eps`` (a subclass setting the class attribute; an eps set on
    the arguments needs none); ``ConfigDeclined`` when the eps rule says the trainer cannot run the case."""
    declined = eps_declined(trainer, case)
    if declined:
        raise ConfigDeclined(declined)
    shipped = as_shipped(trainer)
    trainer_class = shipped.trainer
    if shipped.eps_argument is not None or not declares_eps(shipped) or trainer_class.eps == case.eps:
        return trainer_class
    return type(trainer_class.__name__, (trainer_class,), {"eps": case.eps, "__module__": trainer_class.__module__})


# --- the model contract: declared, and observed --------------------------------------------------------


class ContractMismatch(ValueError):
    """A usage error: the trainer's ``model_contract`` is not what the run showed it uses."""


def observed_contract(trainer, observer: RunObserver) -> str:
    """The contract the run showed (``"logits (model(input_ids), .logits read)"``); a
    :class:`ContractMismatch` naming both when a declared ``model_contract`` disagrees."""
    seen = observer.contracts()
    if not seen:
        return "not observed: no forward pass ran"
    described = "; ".join(f"{name} ({how})" for name, how in seen.items())
    trainer_class = as_shipped(trainer).trainer
    declared = getattr(trainer_class, "model_contract", None)
    if declared is None:
        return described
    if declared not in MODEL_CONTRACTS:
        raise ContractMismatch(f"{trainer_class.__name__}.model_contract must be one of {MODEL_CONTRACTS}, got {declared!r}")
    if declared not in seen:
        raise ContractMismatch(
            f"{trainer_class.__name__} declares model_contract={declared!r}, but the run observed {described}: "
            "remove the attribute or declare what the trainer does (docs/trainer.md)"
        )
    return described


# --- what the harness hands the trainer -----------------------------------------------------------------


def training_examples(case: TrainerCase, world_size: int = 1) -> list[dict[str, list[int]]]:
    """Prompt-answer rows of varied length; a row of an empty rank (``TrainerCase.rank_of_row``) or
    one of ``prompt_only_rows`` is all prompt."""
    generator = torch.Generator().manual_seed(case.data_seed)
    examples = []
    for i in range(case.examples_per_rank * world_size):
        length = int(torch.randint(2, case.max_length + 1, (), generator=generator))
        ids = torch.randint(1, TINY_CONFIG["mask_token_id"], (length,), generator=generator)
        prompt_only = case.rank_of_row(i, world_size) in case.empty_ranks or i in case.prompt_only_rows
        prompt = length if prompt_only else int(torch.randint(0, length, (), generator=generator))
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


#: The ``TrainingArguments`` fields the harness sets on every run, on whatever arguments class the
#: trainer ships with (docs/trainer.md, What a target may bring); an adapter may not set them.
CONTROLLED_ARGUMENTS = (
    "output_dir", "per_device_train_batch_size", "per_device_eval_batch_size", "gradient_accumulation_steps",
    "num_train_epochs", "learning_rate", "optim", "lr_scheduler_type", "weight_decay", "max_grad_norm", "logging_steps",
    "save_strategy", "eval_strategy", "report_to", "disable_tqdm", "use_cpu", "seed", "train_sampling_strategy",
    "remove_unused_columns", "dataloader_num_workers", "average_tokens_across_devices", "ddp_backend", "bf16", "fp16",
)


def training_arguments(
    case: TrainerCase, output_dir: str, distributed: bool = False, rank: int = 0, trainer=None
) -> TrainingArguments:
    """The run's arguments, on the trainer's own arguments class: the controlled fields from the case,
    the adapter's ``argument_values``, the case's eps on ``eps_argument``, the class's defaults for the rest."""
    shipped = as_shipped(trainer) if trainer is not None else None
    controlled = dict(
        output_dir=output_dir,
        per_device_train_batch_size=case.train_batch_size,
        per_device_eval_batch_size=case.eval_batch_size or case.examples_per_rank,
        gradient_accumulation_steps=case.window_size,
        num_train_epochs=1,
        learning_rate=case.lr,
        optim="sgd",
        lr_scheduler_type="constant",
        weight_decay=0.0,
        max_grad_norm=0.0,
        logging_steps=1,
        logging_nan_inf_filter=False,  # a NaN loss is logged as it is, not as the mean so far (docs/budget.md, Kinds)
        save_strategy="no",
        eval_strategy="no",
        report_to="none",
        disable_tqdm=True,
        use_cpu=case.device == "cpu",
        seed=case.rank_seed(rank),
        train_sampling_strategy="sequential",
        remove_unused_columns=False,
        dataloader_num_workers=0,
        average_tokens_across_devices=case.average_tokens_across_devices,
        ddp_backend=backend(case.device) if distributed else None,
        bf16=case.autocast and case.dtype == "bfloat16",
        fp16=case.autocast and case.dtype == "float16",
    )
    if shipped is None:
        return TrainingArguments(**controlled)
    taken = sorted(set(shipped.argument_values) & set(controlled))
    if taken:
        raise ValueError(
            f"argument_values sets {', '.join(taken)}, which the harness controls on every run "
            f"(parity.training.diffusion.drivers.trainer_run.CONTROLLED_ARGUMENTS): leave them out"
        )
    eps = {} if shipped.eps_argument is None else {shipped.eps_argument: case.eps}
    return shipped.arguments(**controlled, **shipped.argument_values, **eps)


def seeded_state(seed: int) -> torch.Tensor:
    """The global CPU generator's state right after the Trainer seeds it with ``args.seed``."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return torch.get_rng_state()


# --- one rank's run ------------------------------------------------------------------------------------

#: The phases a run is judged in, apart (docs/trainer.md, Training and evaluation judged apart): the
#: observer's ``train`` forwards, and the ``evaluate`` and ``predict`` forwards of evaluation.
PHASES = {"train": ("train",), "evaluation": ("evaluate", "predict")}


@dataclass
class TrainerRecord:
    """What one rank's run produced, as observed from outside."""

    steps: list[StepResult]
    train_draws: list[list[Draw]]  # window k of this rank, replayed
    eval_loss: float | None
    eval_draws: list[Draw] = field(default_factory=list)  # one per evaluate() batch
    batch_losses: list[torch.Tensor] = field(default_factory=list)  # prediction_step, one per eval batch
    batch_draws: list[Draw] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    #: The model contract as observed (docs/trainer.md), with what showed it.
    contract: str = ""
    #: The eps the run and its replay used, and how it was chosen.
    eps: float = PUBLISHED_EPS
    eps_source: str = ""
    #: Under ``fp16=True``: per step, the loss scale its gradients were unscaled by, and whether the
    #: scaler skipped it (an overflow of the scaled gradients: the parameters stay as they were).
    loss_scales: list[float] = field(default_factory=list)
    skipped: list[bool] = field(default_factory=list)
    #: The microbatches of each window the run actually ran (observed, whether or not its noise was replayed).
    windows: list[int] = field(default_factory=list)

    @property
    def crashed(self) -> bool:
        return any(f.kind == "crash" and f.phase != "evaluation" for f in self.findings)

    def judged(self, phase: str) -> bool:
        """Whether ``phase`` (``train`` or ``evaluation``) has a reference to be held to: it ran, and no
        finding of its own (a crash, noise, an input-contract difference) stops its comparison."""
        if self.crashed or any(f.phase == phase and f.kind in STOPPING_KINDS for f in self.findings):
            return False
        return bool(self.steps) if phase == "train" else self.eval_loss is not None or bool(self.batch_losses)


#: Findings after which a phase has no reference: without the published draws of the batches the
#: model received, there is nothing to replay.
STOPPING_KINDS = ("noise", "input-contract", "crash")


def _evaluate(trainer, observer: RunObserver) -> tuple[float | None, list[torch.Tensor]]:
    observer.phase = "evaluate"
    eval_loss = trainer.evaluate()["eval_loss"]
    observer.phase = "predict"
    trainer.model.eval()
    batch_losses = []
    for batch in trainer.get_eval_dataloader():
        loss, _, _ = trainer.prediction_step(trainer.model, batch, prediction_loss_only=True)
        batch_losses.append(loss.detach().cpu())
    return eval_loss, batch_losses


def _build(trainer, case: TrainerCase, model, rows, observer: RunObserver, output_dir: str, world_size: int, rank: int):
    """The trainer as its target ships it (``parity.training.shipped``), with the observer's collator
    around whichever collator it ends up with; ``ConfigDeclined`` from its ``__init__`` passes through."""
    shipped = as_shipped(trainer)
    processing_class = shipped.tokenizer(model)
    built = trainer_for_case(shipped, case)(
        model=model,
        args=training_arguments(case, output_dir, distributed=world_size > 1, rank=rank, trainer=shipped),
        train_dataset=rows,
        eval_dataset=rows if case.evaluate else None,
        processing_class=processing_class,
        data_collator=shipped.collator_for(processing_class, pad_collate),
        callbacks=[observer],
    )
    built.data_collator = observer.collator(built.data_collator)
    built.compute_loss = observer.compute_loss(built.compute_loss)
    built.remove_callback(PrinterCallback)  # the observer, not the console, carries the results
    return built


def count_findings(observer: RunObserver) -> list[Finding]:
    """A count the Trainer handed the trainer in a dtype that cannot hold it (``parity.training.diffusion.counts``), once
    per step. Only the dtype is judged: which count a trainer divides by is its objective, judged on its losses."""
    found = {}
    for step, count in observer.counts:
        problem = count_problem(count, f"step {step}")
        if problem and step not in found:
            found[step] = Finding("normalisation", problem, phase="train")
    return list(found.values())


def run_trainer(trainer, case: TrainerCase, output_dir: str, world_size: int = 1, rank: int = 0) -> TrainerRecord:
    """``Trainer.train()``, ``evaluate()`` and ``prediction_step`` on this rank's share, observed from outside.

    ``trainer``: a ``Trainer`` subclass or what its target ships (``parity.training.shipped``). The case
    runs at the nearest eps inside the trainer's domain. A trainer that raises gives a record with a
    ``crash`` finding (and whatever it did before; a crash in evaluation leaves the training judged);
    ``ConfigDeclined`` when the eps rule skips the case or the trainer's ``__init__`` declines it;
    ``ContractMismatch`` on a wrong declaration.
    """
    check_dtype_runs_on(case.dtype, case.device)
    trainer = as_shipped(trainer)  # a factory is called once
    case = inside_eps_domain(trainer, case)
    model = tiny_model(case.model_seed, case.weights_dtype)
    observer = RunObserver(model)
    rows = training_examples(case, world_size)
    eval_loss, batch_losses, findings, built, seeded_at = None, [], [], None, 0
    try:
        try:
            built = _build(trainer, case, model, rows, observer, output_dir, world_size, rank)
            check_loss_scaling(built, case)
            if not torch.equal(torch.get_rng_state(), seeded_state(case.rank_seed(rank))):
                findings.append(
                    Finding(
                        "noise",
                        f"after construction the global generator is not where args.seed={case.rank_seed(rank)} put it: "
                        "the trainer re-seeded it or drew from it, so its noise is not the seed's",
                        phase="train",
                    )
                )
            seeded_at = observer.snapshot()  # from here the generator only moves forward (docs/trainer.md)
            with bounded(f"`{type(built).__name__}.train()`"):  # docs/faults.md, Bounds
                built.train()
        except (UnscaledFloat16, ConfigDeclined):
            raise
        except Exception as error:  # the target raised: a crash finding, not a harness error
            findings = [f for f in findings if f.kind != "noise"] + [Finding("crash", describe_raised(error), phase="train")]
        if case.evaluate and built is not None and not any(f.kind == "crash" for f in findings):
            try:
                eval_loss, batch_losses = _evaluate(built, observer)
            except Exception as error:
                findings.append(Finding("crash", f"in evaluation: {describe_raised(error)}", phase="evaluation"))
    finally:
        observer.close()
    record = TrainerRecord(
        [], [], eval_loss, batch_losses=batch_losses, findings=findings,
        contract=observed_contract(trainer, observer), eps=case.eps, eps_source=eps_source(trainer),
        windows=[b - a for a, b in zip([0, *observer.window_ends], observer.window_ends)],
    )
    if record.crashed:
        return record
    config = model.config
    for phase, observed in PHASES.items():
        if phase == "evaluation" and not record.judged("evaluation"):
            continue
        replayed, noise = replay_noise(
            observer, observed, config.mask_token_id, config.eos_token_id, case.eps, record.eps_source, seeded_at
        )
        record.findings += [replace(f, phase=phase) for f in noise]
        if phase == "train":
            train = [draw for _, draw in replayed]
            bounds = [0, *observer.window_ends]
            record.train_draws = [train[a:b] for a, b in zip(bounds, bounds[1:])] if train else []
        else:
            record.eval_draws = [draw for name, draw in replayed if name == "evaluate"]
            record.batch_draws = [draw for name, draw in replayed if name == "predict"]
    record.findings += count_findings(observer)
    losses = [entry["loss"] for entry in built.state.log_history if "loss" in entry]
    if not losses:
        return record
    if not len(losses) == len(observer.grads) == len(observer.params) == len(observer.window_ends):
        raise AssertionError(
            f"expected one logged loss, gradient and parameter record per step: {len(losses)} losses, "
            f"{len(observer.grads)} gradients, {len(observer.params)} parameters, {len(observer.window_ends)} windows"
        )
    record.steps = [
        StepResult(torch.tensor(loss, dtype=torch.float32), grads, params)
        for loss, grads, params in zip(losses, observer.grads, observer.params, strict=True)
    ]
    record.loss_scales, record.skipped = observer.loss_scales, observer.skipped
    return record


class UnscaledFloat16(ValueError):
    """A float16 run that accelerate would not scale: a usage error, never the target's crash."""


def check_loss_scaling(trainer, case: TrainerCase) -> None:
    """A float16 run whose accelerator has no loss scaler would train in float32 under the float16
    label: refused before anything is judged (``parity.devices.check_dtype_runs_on`` says where)."""
    if case.loss_scaled and getattr(trainer.accelerator, "scaler", None) is None:
        raise UnscaledFloat16(
            f"TrainingArguments(fp16=True) on {case.device!r}: accelerate set up no loss scaler (nor float16 "
            "autocast), so the run would be float32 under a float16 label"
        )
