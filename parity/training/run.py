"""Driving a trainer target: any masked-diffusion ``transformers.Trainer``, built as a user would build it.

The seam needs nothing but a ``Trainer`` subclass (docs/trainer.md). The harness hands it its own
tiny model, rows and collator, seeds torch's global generator through ``args.seed``, runs
``train()``, ``evaluate()`` and ``prediction_step``, and watches from outside
(``parity.training.observe``). The masks are read off the ids the encoder received and ``p`` is
replayed from the generator timeline (``parity.training.noise_replay``); the oracle then runs on the replayed
draws and judges the run (``parity.training.verdict``); ``parity.properties.training`` is the property.

Two class attributes of the trainer are read, never required: ``eps`` (the rule is
:func:`eps_declined`) and ``model_contract`` (held to the contract observed, :func:`observed_contract`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import torch
from transformers import PrinterCallback, TrainingArguments

from oracle.nemotron_diffusion import IGNORE_INDEX, TINY_CONFIG
from oracle.window_reference import Draw, StepResult
from parity.bounds import bounded
from parity.cases import PUBLISHED_EPS, TrainerCase
from parity.compare import Finding
from parity.crash import describe_raised
from parity.devices import backend, check_dtype_runs_on
from parity.targets import ConfigDeclined
from parity.training.noise_replay import replay_noise
from parity.training.observe import RunObserver
from parity.training.window_cases import tiny_model

PAD_ID = 0
MODEL_CONTRACTS = ("loss-pair", "logits")


# --- the eps rule (docs/trainer.md, What the harness reads) -------------------------------------------


def declares_eps(trainer_class) -> bool:
    return isinstance(getattr(trainer_class, "eps", None), float)


def eps_source(trainer_class) -> str:
    """How the eps a run uses was chosen, as every report and message shows it."""
    return "declared by the trainer" if declares_eps(trainer_class) else f"not declared: the published {PUBLISHED_EPS:g} assumed"


def eps_declined(trainer_class, case: TrainerCase) -> str | None:
    """Why ``trainer_class`` cannot run ``case`` (its eps varies, and the trainer declares none); None if it can."""
    if declares_eps(trainer_class) or case.eps == PUBLISHED_EPS:
        return None
    return (
        f"{trainer_class.__name__} declares no class attribute eps: the published {PUBLISHED_EPS:g} is assumed, "
        f"so a case at eps={case.eps:g} is skipped"
    )


def trainer_for_case(trainer_class, case: TrainerCase):
    """The trainer class at the case's ``eps`` (a subclass setting the class attribute); ``ConfigDeclined``
    when the eps rule says the trainer cannot run the case."""
    declined = eps_declined(trainer_class, case)
    if declined:
        raise ConfigDeclined(declined)
    if not declares_eps(trainer_class) or trainer_class.eps == case.eps:
        return trainer_class
    return type(trainer_class.__name__, (trainer_class,), {"eps": case.eps, "__module__": trainer_class.__module__})


# --- the model contract: declared, and observed --------------------------------------------------------


class ContractMismatch(ValueError):
    """A usage error: the trainer's ``model_contract`` is not what the run showed it uses."""


def observed_contract(trainer_class, observer: RunObserver) -> str:
    """The contract the run showed (``"logits (model(input_ids), .logits read)"``); a
    :class:`ContractMismatch` naming both when a declared ``model_contract`` disagrees."""
    seen = observer.contracts()
    if not seen:
        return "not observed: no forward pass ran"
    described = "; ".join(f"{name} ({how})" for name, how in seen.items())
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
    """Prompt-answer rows of varied length; row ``i`` is served to rank ``i % world_size``.

    The sequential sampler and accelerate's round-robin sharding make that assignment; the batches
    the harness's collator actually served, not this assumption, are what the oracle replays.
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


def training_arguments(case: TrainerCase, output_dir: str, distributed: bool = False, rank: int = 0) -> TrainingArguments:
    return TrainingArguments(
        output_dir=output_dir,
        per_device_train_batch_size=1,
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


def seeded_state(seed: int) -> torch.Tensor:
    """The global CPU generator's state right after the Trainer seeds it with ``args.seed``."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return torch.get_rng_state()


# --- one rank's run ------------------------------------------------------------------------------------


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

    @property
    def crashed(self) -> bool:
        return any(f.kind == "crash" for f in self.findings)


def _run(trainer, case: TrainerCase, observer: RunObserver) -> tuple[float | None, list[torch.Tensor]]:
    with bounded(f"`{type(trainer).__name__}.train()`"):  # docs/faults.md, Bounds
        trainer.train()
    if not case.evaluate:
        return None, []
    observer.phase = "evaluate"
    eval_loss = trainer.evaluate()["eval_loss"]
    observer.phase = "predict"
    trainer.model.eval()
    batch_losses = []
    for batch in trainer.get_eval_dataloader():
        loss, _, _ = trainer.prediction_step(trainer.model, batch, prediction_loss_only=True)
        batch_losses.append(loss.detach().cpu())
    return eval_loss, batch_losses


def run_trainer(trainer_class, case: TrainerCase, output_dir: str, world_size: int = 1, rank: int = 0) -> TrainerRecord:
    """``Trainer.train()``, ``evaluate()`` and ``prediction_step`` on this rank's share, observed from outside.

    A trainer that raises gives a record with a ``crash`` finding (and whatever it did before);
    ``ConfigDeclined`` when the eps rule skips the case; ``ContractMismatch`` on a wrong declaration.
    """
    check_dtype_runs_on(case.dtype, case.device)
    configured = trainer_for_case(trainer_class, case)
    model = tiny_model(case.model_seed, case.weights_dtype)
    observer = RunObserver(model)
    rows = training_examples(case, world_size)
    eval_loss, batch_losses, findings, trainer = None, [], [], None
    try:
        trainer = configured(
            model=model,
            args=training_arguments(case, output_dir, distributed=world_size > 1, rank=rank),
            train_dataset=rows,
            eval_dataset=rows if case.evaluate else None,
            data_collator=observer.collator(pad_collate),
            callbacks=[observer],
        )
        trainer.remove_callback(PrinterCallback)  # the observer, not the console, carries the results
        check_loss_scaling(trainer, case)
        if not torch.equal(torch.get_rng_state(), seeded_state(case.rank_seed(rank))):
            findings.append(
                Finding(
                    "noise",
                    f"after construction the global generator is not where args.seed={case.rank_seed(rank)} put it: "
                    "the trainer re-seeded it or drew from it, so its noise is not the seed's",
                )
            )
        seeded_at = observer.snapshot()  # from here the generator only moves forward (docs/trainer.md)
        eval_loss, batch_losses = _run(trainer, case, observer)
    except UnscaledFloat16:
        raise
    except Exception as error:  # the target raised: a crash finding, not a harness error
        findings = [f for f in findings if f.kind != "noise"] + [Finding("crash", describe_raised(error))]
    finally:
        observer.close()
    record = TrainerRecord(
        [], [], eval_loss, batch_losses=batch_losses, findings=findings,
        contract=observed_contract(trainer_class, observer), eps=case.eps, eps_source=eps_source(trainer_class),
    )
    if record.crashed:
        return record
    config = model.config
    replayed, noise = replay_noise(observer, config.mask_token_id, config.eos_token_id, case.eps, record.eps_source,
                                   seeded_at)
    record.findings += noise
    train = [draw for phase, draw in replayed if phase == "train"]
    bounds = [0, *observer.window_ends]
    record.train_draws = [train[a:b] for a, b in zip(bounds, bounds[1:])]
    record.eval_draws = [draw for phase, draw in replayed if phase == "evaluate"]
    record.batch_draws = [draw for phase, draw in replayed if phase == "predict"]
    losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
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
