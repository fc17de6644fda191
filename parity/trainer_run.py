"""Whole training runs: any masked-diffusion ``transformers.Trainer`` beside the oracle's full-window SGD.

The seam needs nothing but a ``Trainer`` subclass (docs/trainer.md). The harness hands it the
harness's own tiny model, rows and collator, seeds torch's global generator through ``args.seed``,
and observes from outside:

* the collator it was given records every batch served, and the generator's state;
* a forward pre-hook on the model records the keywords it is called with (the published contract
  passes ``masked_indices`` and ``p_mask``), and one on the input embedding records the noisy ids
  the encoder actually receives (every contract), each with the generator's state;
* callbacks record the gradients before each optimizer step and the parameters after it, and the
  generator's state at every event.

The realized masks are read off the noisy ids. ``p`` is *replayed*: the published noising (every
row's ``t``, then the per-token uniforms, ``p = (1 - eps) t + eps``) is re-drawn from the recorded
generator states until it reproduces the observed masks exactly; a replay is accepted only when the
state it ends in is one the run actually reached (so a coincidental match cannot be taken). A
forward whose masks no replay reproduces, a ``p_mask`` that differs from the replayed ``p``, or a
noisy input that is not the batch with the mask token placed is a ``noise`` finding. The oracle
then runs on the replayed draws: one reference step per window over all ranks' rows, and the
single-batch loss for evaluation.
"""

from __future__ import annotations

import tempfile
import traceback
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace

import torch
from transformers import PrinterCallback, TrainerCallback, TrainingArguments

from oracle.nemotron_diffusion import IGNORE_INDEX, TINY_CONFIG, eos_padding_rule
from oracle.window_reference import Draw, StepResult, single_batch_loss, sgd_step
from parity.compare import (
    Comparison,
    Finding,
    Verdict,
    assert_verdict,
    compare_states,
    compare_tensor,
    informativeness,
    judge,
    judges_informativeness,
)
from parity.devices import DEVICES, LOWER_DTYPE, backend, torch_dtype
from parity.window_cases import tiny_model
from parity.window_run import compare_steps, local_mean_steps

PAD_ID = 0
PUBLISHED_EPS = 1e-3
MODEL_CONTRACTS = ("loss-pair", "logits")


@dataclass(frozen=True)
class TrainerCase:
    """Everything a training run depends on; plain values, so a DDP worker can receive it as JSON."""

    examples_per_rank: int = 5
    window_size: int = 2
    max_length: int = 10
    data_seed: int = 0
    #: The Trainer's ``args.seed``: it seeds torch's global generator, which the noise is drawn from.
    noise_seed: int = 1
    model_seed: int = 0
    lr: float = 0.01
    dtype: str = "float32"
    device: str = "cpu"
    average_tokens_across_devices: bool = True
    #: ranks whose rows are all prompt, so their windows realize no mask at all
    empty_ranks: tuple[int, ...] = ()
    evaluate: bool = True
    #: rows per evaluation batch (0: all of a rank's rows in one batch)
    eval_batch_size: int = 0
    #: the noising's ``eps``, given to a trainer that declares a class attribute ``eps``
    eps: float = PUBLISHED_EPS

    def __post_init__(self):
        if self.device not in DEVICES:
            raise ValueError(f"device must be one of cpu, cuda; got {self.device!r}")
        torch_dtype(self.dtype)  # a ValueError naming the allowed values
        if self.examples_per_rank < 1 or self.window_size < 1 or self.max_length < 2:
            raise ValueError("examples_per_rank and window_size must be >= 1, max_length >= 2")
        if not 0.0 < self.eps <= 1.0:
            raise ValueError(f"eps must lie in (0, 1], got {self.eps!r}")

    def to_json(self) -> dict:
        return asdict(self)


def model_contract(trainer_class) -> str:
    """What the trainer declares (class attribute ``model_contract``); the published one by default."""
    contract = getattr(trainer_class, "model_contract", "loss-pair")
    if contract not in MODEL_CONTRACTS:
        raise ValueError(f"{trainer_class.__name__}.model_contract must be one of {MODEL_CONTRACTS}, got {contract!r}")
    return contract


def declares_eps(trainer_class) -> bool:
    return isinstance(getattr(trainer_class, "eps", None), float)


def trainer_for_case(trainer_class, case: TrainerCase):
    """The trainer class with the case's ``eps`` (a subclass setting the class attribute ``eps``)."""
    if not declares_eps(trainer_class):
        if case.eps != PUBLISHED_EPS:
            raise ValueError(f"{trainer_class.__name__} declares no class attribute eps; it runs only at eps={PUBLISHED_EPS}")
        return trainer_class
    if trainer_class.eps == case.eps:
        return trainer_class
    return type(trainer_class.__name__, (trainer_class,), {"eps": case.eps, "__module__": trainer_class.__module__})


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


# --- observing a run from outside -----------------------------------------------------------------


@dataclass
class ObservedForward:
    """One forward pass of the harness's model, as the model saw it."""

    phase: str
    noisy_ids: torch.Tensor
    kwargs: dict[str, torch.Tensor]  # masked_indices / p_mask / labels / input_ids when passed
    state_index: int  # position in the generator timeline of the embedding's snapshot


class RunObserver(TrainerCallback):
    """Hooks, collator and callbacks: what the trainer served, fed the model, and did to the weights."""

    WATCHED_KWARGS = ("input_ids", "labels", "masked_indices", "p_mask")

    def __init__(self, model: torch.nn.Module):
        self.model = model
        self.phase = "train"
        self.timeline: list[torch.Tensor] = []  # the global CPU generator's states, consecutive duplicates dropped
        #: per phase, each served batch and the timeline position just after it was collated
        self.batches: dict[str, list[tuple[dict[str, torch.Tensor], int]]] = {}
        self.forwards: list[ObservedForward] = []
        self.window_ends: list[int] = []  # number of train forwards when each optimizer step began
        self.grads: list[dict[str, torch.Tensor | None]] = []
        self.params: list[dict[str, torch.Tensor]] = []
        self._pending: dict[str, torch.Tensor] = {}
        self._handles = [
            model.register_forward_pre_hook(self._on_model_call, with_kwargs=True),
            model.get_input_embeddings().register_forward_pre_hook(self._on_embedding),
        ]

    def close(self) -> None:
        for handle in self._handles:
            handle.remove()

    def snapshot(self) -> int:
        state = torch.get_rng_state()
        if not self.timeline or not torch.equal(self.timeline[-1], state):
            self.timeline.append(state)
        return len(self.timeline) - 1

    def collator(self, collate):
        def observed(examples):
            batch = collate(examples)
            served = {k: v.detach().cpu().clone() for k, v in batch.items()}
            self.batches.setdefault(self.phase, []).append((served, self.snapshot()))
            return batch

        return observed

    def _on_model_call(self, module, args, kwargs):
        self.snapshot()
        named = dict(zip(("input_ids",), args)) | kwargs
        self._pending = {
            key: named[key].detach().cpu().clone()
            for key in self.WATCHED_KWARGS
            if isinstance(named.get(key), torch.Tensor)
        }

    def _on_embedding(self, module, args):
        index = self.snapshot()
        self.forwards.append(ObservedForward(self.phase, args[0].detach().cpu().clone(), self._pending, index))
        self._pending = {}

    # callbacks: every event is a point of the generator timeline
    def on_train_begin(self, args, state, control, **kwargs):
        self.snapshot()

    def on_epoch_begin(self, args, state, control, **kwargs):
        self.snapshot()

    def on_step_begin(self, args, state, control, **kwargs):
        self.snapshot()

    def on_substep_end(self, args, state, control, **kwargs):
        self.snapshot()

    def on_pre_optimizer_step(self, args, state, control, **kwargs):
        self.snapshot()
        self.window_ends.append(sum(f.phase == "train" for f in self.forwards))
        self.grads.append(
            {n: None if p.grad is None else p.grad.detach().cpu().clone() for n, p in self.model.named_parameters()}
        )

    def on_optimizer_step(self, args, state, control, **kwargs):
        self.snapshot()
        self.params.append({n: p.detach().cpu().clone() for n, p in self.model.named_parameters()})

    def on_step_end(self, args, state, control, **kwargs):
        self.snapshot()

    def on_evaluate(self, args, state, control, **kwargs):
        self.snapshot()

    def on_prediction_step(self, args, state, control, **kwargs):
        self.snapshot()


@dataclass
class ReplayedForward:
    """A forward's batch as served, its realized mask (observed) and ``p`` (replayed)."""

    phase: str
    draw: Draw


def _replay(state: torch.Tensor, maskable: torch.Tensor, eps: float):
    generator = torch.Generator()
    generator.set_state(state)
    rows, length = maskable.shape
    t = torch.rand(rows, generator=generator)
    p = ((1 - eps) * t + eps)[:, None].expand(rows, length).contiguous()
    masked = (torch.rand(rows, length, generator=generator) < p) & maskable
    return masked, p, generator.get_state()


def replay_noise(
    observer: RunObserver, mask_token_id: int, eos_token_id: int | None, eps: float
) -> tuple[list[ReplayedForward], list[Finding]]:
    """Pair every forward with its batch, read its mask, replay its ``p``; list what does not fit."""
    findings: list[Finding] = []
    served = {phase: list(batches) for phase, batches in observer.batches.items()}
    forwards = observer.forwards
    counts = {phase: sum(f.phase == phase for f in forwards) for phase in served}
    for phase, batches in served.items():
        if counts.get(phase, 0) != len(batches):
            findings.append(
                Finding("noise", f"{phase}: the model ran {counts.get(phase, 0)} forward passes for {len(batches)} served batches")
            )
    if findings:
        return [], findings
    cursor = {phase: 0 for phase in served}
    prepared, collated = [], []
    for f in forwards:
        batch, collated_at = served[f.phase][cursor[f.phase]]
        cursor[f.phase] += 1
        model_ids, _, maskable, _ = eos_padding_rule(
            batch["input_ids"], batch.get("attention_mask"), batch.get("labels"), eos_token_id
        )
        observed = f.noisy_ids == mask_token_id
        prepared.append((batch, model_ids, maskable, observed))
        collated.append(collated_at)

    timeline = observer.timeline
    index_of = {}
    for position, state in enumerate(timeline):
        index_of.setdefault(bytes(state.numpy()), []).append(position)

    def confirmed(state: torch.Tensor, after: int, until: int) -> bool:
        return any(after < p <= until for p in index_of.get(bytes(state.numpy()), []))

    def chain(k: int, state: torch.Tensor, start: int):
        """Replays of forwards k, k+1, ... from ``state`` until one ends in a state the run reached.

        The state the draws end in must be one the run reached after the last replayed batch was
        collated (noise cannot be drawn for a batch not yet served) and by its forward pass.
        """
        replays = []
        while k < len(forwards):
            _, _, maskable, observed = prepared[k]
            if observed.shape != maskable.shape:
                return None
            masked, p, state = _replay(state, maskable, eps)
            if not torch.equal(masked, observed):
                return None
            replays.append((p, state))
            if confirmed(state, max(start, collated[k]), forwards[k].state_index):
                return replays
            k += 1
        return None

    replayed: list[ReplayedForward] = []
    k, previous, continuation = 0, 0, None
    while k < len(forwards):
        batch, model_ids, maskable, observed = prepared[k]
        f = forwards[k]
        candidates = [] if continuation is None else [(continuation, previous)]
        candidates += [(timeline[i], i) for i in range(f.state_index - 1, previous - 1, -1)]
        # The shortest confirmed explanation wins: a stale state can only explain a forward through
        # a coincidence that a longer chain of replays makes possible, never a shorter one.
        found = None
        for state, start in candidates:
            explained = chain(k, state, start)
            if explained and (found is None or len(explained) < len(found)):
                found = explained
        if not found:
            where = f"{f.phase} forward {k}"
            if observed.shape != maskable.shape:
                findings.append(Finding("noise", f"{where}: the model received ids of shape {tuple(f.noisy_ids.shape)} for a batch of {tuple(maskable.shape)}"))
                return replayed, findings
            outside = observed & ~maskable
            detail = (
                f"{int(outside.sum())} masked positions are not maskable under the EOS rule"
                if outside.any()
                else "no replay of the published noising (t per row, then per-token uniforms, "
                f"p = (1 - eps) t + eps, eps = {eps:g}) from the seeded global generator reproduces its masks"
            )
            findings.append(Finding("noise", f"{where}: {detail}"))
            found = [(torch.full(maskable.shape, float("nan")), None)]
        for offset, (p, end_state) in enumerate(found):
            j = k + offset
            batch, model_ids, maskable, observed = prepared[j]
            fj = forwards[j]
            expected = torch.where(observed, mask_token_id, model_ids)
            if not torch.equal(fj.noisy_ids, expected):
                findings.append(
                    Finding("noise", f"{fj.phase} forward {j}: the unmasked ids the model received are not the batch under the EOS rule")
                )
            given_p = fj.kwargs.get("p_mask")
            if given_p is not None and end_state is not None and observed.any():
                a, b = given_p[observed].double(), p[observed].double()
                if not torch.allclose(a, b, rtol=4 * torch.finfo(torch.float32).eps, atol=0):
                    worst = (a - b).abs().max().item()
                    findings.append(Finding("noise", f"{fj.phase} forward {j}: p_mask differs from the replayed p by up to {worst:.3e}"))
            given_mask = fj.kwargs.get("masked_indices")
            if given_mask is not None and not torch.equal(given_mask.bool(), observed):
                findings.append(Finding("noise", f"{fj.phase} forward {j}: masked_indices differ from the mask placed in the ids"))
            replayed.append(ReplayedForward(fj.phase, Draw(batch, observed, p)))
        continuation = found[-1][1]
        previous = forwards[k + len(found) - 1].state_index
        k += len(found)
    return replayed, findings


# --- running a trainer ------------------------------------------------------------------------------


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
    contract: str = "loss-pair"

    @property
    def crashed(self) -> bool:
        return any(f.kind == "crash" for f in self.findings)


def training_arguments(case: TrainerCase, output_dir: str, distributed: bool = False) -> TrainingArguments:
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
        save_strategy="no",
        eval_strategy="no",
        report_to="none",
        disable_tqdm=True,
        use_cpu=case.device == "cpu",
        seed=case.noise_seed,
        train_sampling_strategy="sequential",
        remove_unused_columns=False,
        dataloader_num_workers=0,
        average_tokens_across_devices=case.average_tokens_across_devices,
        ddp_backend=backend(case.device) if distributed else None,
    )


def seeded_state(seed: int) -> torch.Tensor:
    """The global CPU generator's state right after the Trainer seeds it with ``args.seed``."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return torch.get_rng_state()


def _crash(error: BaseException) -> Finding:
    frames = traceback.extract_tb(error.__traceback__)
    where = f" at {frames[-1].filename}:{frames[-1].lineno}" if frames else ""
    return Finding("crash", f"{type(error).__name__}: {error}{where}")


def run_trainer(trainer_class, case: TrainerCase, output_dir: str, world_size: int = 1) -> TrainerRecord:
    """``Trainer.train()``, ``evaluate()`` and ``prediction_step`` on this rank's share, observed from outside.

    A trainer that raises gives a record with a ``crash`` finding (and whatever it did before).
    """
    contract = model_contract(trainer_class)
    model = tiny_model(case.model_seed, torch_dtype(case.dtype))
    observer = RunObserver(model)
    rows = training_examples(case, world_size)
    collate = observer.collator(pad_collate)
    eval_loss, batch_losses, findings, trainer = None, [], [], None
    try:
        trainer = trainer_for_case(trainer_class, case)(
            model=model,
            args=training_arguments(case, output_dir, distributed=world_size > 1),
            train_dataset=rows,
            eval_dataset=rows if case.evaluate else None,
            data_collator=collate,
            callbacks=[observer],
        )
        trainer.remove_callback(PrinterCallback)  # the observer, not the console, carries the results
        if not torch.equal(torch.get_rng_state(), seeded_state(case.noise_seed)):
            findings.append(
                Finding(
                    "noise",
                    f"after construction the global generator is not where args.seed={case.noise_seed} put it: "
                    "the trainer re-seeded it or drew from it, so its noise is not the seed's",
                )
            )
        trainer.train()
        if case.evaluate:
            observer.phase = "evaluate"
            eval_loss = trainer.evaluate()["eval_loss"]
            observer.phase = "predict"
            trainer.model.eval()
            for batch in trainer.get_eval_dataloader():
                loss, _, _ = trainer.prediction_step(trainer.model, batch, prediction_loss_only=True)
                batch_losses.append(loss.detach().cpu())
    except Exception as error:  # the target raised: a crash finding, not a harness error
        findings = [f for f in findings if f.kind != "noise"] + [_crash(error)]
    finally:
        observer.close()
    crashed = any(f.kind == "crash" for f in findings)
    losses = [] if crashed else [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    replayed, noise = ([], []) if crashed else replay_noise(observer, model.config.mask_token_id, model.config.eos_token_id, case.eps)
    findings += noise
    train = [r.draw for r in replayed if r.phase == "train"]
    bounds = [0, *observer.window_ends]
    windows = [train[a:b] for a, b in zip(bounds, bounds[1:])]
    record = TrainerRecord(
        steps=[],
        train_draws=windows,
        eval_loss=eval_loss,
        eval_draws=[r.draw for r in replayed if r.phase == "evaluate"],
        batch_losses=batch_losses,
        batch_draws=[r.draw for r in replayed if r.phase == "predict"],
        findings=findings,
        contract=contract,
    )
    if crashed or not losses:
        return record
    if not len(losses) == len(observer.grads) == len(observer.params) == len(windows):
        raise AssertionError(
            f"expected one logged loss, gradient and parameter record per step: {len(losses)} losses, "
            f"{len(observer.grads)} gradients, {len(observer.params)} parameters, {len(windows)} windows"
        )
    record.steps = [
        StepResult(torch.tensor(loss, dtype=torch.float32), grads, params)
        for loss, grads, params in zip(losses, observer.grads, observer.params, strict=True)
    ]
    return record


# --- the oracle beside it ----------------------------------------------------------------------------


@dataclass
class OracleRun:
    """The oracle on a run's replayed draws, in one dtype and order."""

    steps: list[StepResult]
    eval_loss: torch.Tensor | None
    batch_losses: list[list[torch.Tensor]]  # per rank, per prediction_step batch


def _weighted_eval(model, records, eos, total_rows: int) -> torch.Tensor | None:
    """The Trainer's evaluation loss: each batch's own mean, counted once per row, in the order the
    ranks' batches are gathered (step by step, rank by rank) and cut at the dataset's ``total_rows``.

    The cut is ``gather_for_metrics``'s: to keep batches even across ranks, accelerate has a rank
    that runs out of rows repeat rows from the start, and drops those repeats when it gathers. The
    repeated batch is still observed (and each ``prediction_step`` batch is still compared), but it
    does not count towards the evaluation loss.
    """
    losses, weights, left = [], [], total_rows
    for step in range(max((len(record.eval_draws) for record in records), default=0)):
        for record in records:
            if step < len(record.eval_draws) and left > 0:
                draw = record.eval_draws[step]
                rows = min(draw.masked_indices.shape[0], left)
                losses.append(single_batch_loss(model, draw, eos))
                weights.append(rows)
                left -= rows
    if not losses:
        return None
    total = sum(w * loss for w, loss in zip(weights, losses, strict=True))
    return total / sum(weights)


def oracle_run(
    case: TrainerCase,
    records: Sequence[TrainerRecord],
    dtype: torch.dtype,
    device: str,
    reverse: bool = False,
    start_params: Sequence[dict[str, torch.Tensor]] | None = None,
) -> OracleRun:
    """The oracle over every rank's rows: step k is window k of all ranks; then its evaluation losses.

    ``start_params[k]``, when given, are the parameters step k starts from (the target's own, as
    observed): the oracle's step evaluated on the target's trajectory (docs/budget.md).
    """
    model = tiny_model(case.model_seed, torch_dtype(case.dtype)).to(device, dtype)
    eos = model.config.eos_token_id
    steps = []
    for k in range(len(records[0].train_draws)):
        if start_params is not None and k > 0:
            with torch.no_grad():
                for name, p in model.named_parameters():
                    p.copy_(start_params[k - 1][name].to(device, dtype))
        ranks = [record.train_draws[k][::-1] if reverse else record.train_draws[k] for record in records]
        steps.append(sgd_step(model, ranks, eos, case.lr, rank_local=not case.average_tokens_across_devices))
    with torch.no_grad():
        eval_loss = _weighted_eval(model, records, eos, total_rows=case.examples_per_rank * len(records))
        batch_losses = [[single_batch_loss(model, draw, eos) for draw in record.batch_draws] for record in records]
    return OracleRun(steps, eval_loss, batch_losses)


def golden_run(case: TrainerCase, records: Sequence[TrainerRecord]) -> OracleRun:
    """The oracle in float64 on the CPU."""
    return oracle_run(case, records, torch.float64, "cpu")


def _named(result: StepResult, step: int, kind: str) -> tuple[dict, dict]:
    tensors = getattr(result, kind)
    return tensors, {name: f"step {step} {kind[:-1]} {name}" for name in tensors}


@dataclass
class References:
    """The golden, the valid evaluations in the working dtype, and the oracle one dtype lower."""

    golden: OracleRun
    refs: list[OracleRun]
    lower: list[OracleRun]


def references(case: TrainerCase, records: Sequence[TrainerRecord]) -> References:
    dtype = torch_dtype(case.dtype)
    refs = [oracle_run(case, records, dtype, case.device, reverse) for reverse in (False, True)]
    if records[0].steps:
        refs.append(oracle_run(case, records, dtype, case.device, start_params=[s.params for s in records[0].steps]))
    lower = [oracle_run(case, records, torch_dtype(LOWER_DTYPE[case.dtype]), case.device)] if case.dtype in LOWER_DTYPE else []
    return References(golden_run(case, records), refs, lower)


def trainer_comparisons(
    case: TrainerCase, records: Sequence[TrainerRecord], oracle: References | None = None
) -> list[Comparison]:
    """Every rank's steps, evaluation loss and per-batch losses against the oracle's, each within its budget.

    References (docs/budget.md): the oracle in the working dtype in order, with each window
    reversed, and along the target's own trajectory (each step from the target's parameters before
    it); in a float64 run also the oracle in float32, whose budget names a precision finding. The
    logged losses pass through the Trainer's float32 accumulator, so they are held to the float32
    budget whatever the working dtype.
    """
    oracle = oracle or references(case, records)
    golden, refs, lower = oracle.golden, oracle.refs, oracle.lower
    precise = dict(precision=torch_dtype(case.dtype))
    comparisons = []
    for rank, record in enumerate(records):
        on_rank = dict(rank=rank if len(records) > 1 else None)
        prefix = f"rank {rank} " if len(records) > 1 else ""
        if len(record.steps) != len(golden.steps):
            raise AssertionError(f"step counts differ: out {len(record.steps)}, golden {len(golden.steps)}")
        for step, g in enumerate(golden.steps):
            o = record.steps[step]
            comparisons.append(
                compare_tensor(
                    f"{prefix}step {step} loss", o.loss, [r.steps[step].loss for r in refs], g.loss,
                    step=step, quantity="loss", **precise, **on_rank,
                )
            )
            for kind in ("grads", "params"):
                out, names = _named(o, step, kind)
                comparisons.extend(
                    compare_states(
                        out,
                        [getattr(r.steps[step], kind) for r in refs],
                        getattr(g, kind),
                        lower_refs=[getattr(r.steps[step], kind) for r in lower],
                        names={key: prefix + name for key, name in names.items()},
                        step=step,
                        quantity=kind[:-1],
                        **precise,
                        **on_rank,
                    )
                )
        if record.eval_loss is not None and golden.eval_loss is not None:
            out = torch.tensor(record.eval_loss, dtype=torch.float32)
            eval_refs = [r.eval_loss.to("cpu", torch.float32) for r in refs]
            comparisons.append(
                compare_tensor(f"{prefix}eval loss", out, eval_refs, golden.eval_loss, quantity="eval loss", **precise, **on_rank)
            )
        if len(record.batch_losses) != len(golden.batch_losses[rank]):
            raise AssertionError(f"{len(record.batch_losses)} prediction_step losses for {len(golden.batch_losses[rank])} batches")
        for b, loss in enumerate(record.batch_losses):
            comparisons.append(
                compare_tensor(
                    f"{prefix}prediction_step batch {b} loss",
                    loss.reshape(()),
                    [r.batch_losses[rank][b] for r in refs],
                    golden.batch_losses[rank][b],
                    lower_refs=[r.batch_losses[rank][b] for r in lower],
                    quantity="batch loss",
                    **precise,
                    **on_rank,
                )
            )
    return comparisons


def trainer_verdict(case: TrainerCase, records: Sequence[TrainerRecord], *, strict_precision: bool | None = None) -> Verdict:
    """Findings (noise, crash) of every rank, plus the comparisons when every rank trained."""
    findings = [Finding(f.kind, f.message, f.step, rank if len(records) > 1 else None) for rank, r in enumerate(records) for f in r.findings]
    # A run whose draws could not be replayed has no reference to be held to: its findings say why.
    if any(r.crashed or not r.steps or any(f.kind == "noise" for f in r.findings) for r in records):
        if not findings:
            findings.append(Finding("crash", "the trainer logged no optimizer step"))
        return judge([], findings, strict_precision=strict_precision)
    oracle = references(case, records)
    return judge(
        trainer_comparisons(case, records, oracle),
        findings,
        strict_precision=strict_precision,
        uninformative=uninformative(case, records, oracle),
    )


def uninformative(case: TrainerCase, records: Sequence[TrainerRecord], oracle: References) -> str | None:
    """In a bfloat16 run: why the case cannot tell the local-mean bug from rounding, or None
    (``parity.compare.informativeness``; the prediction is the float64 oracle's, on the replayed draws)."""
    dtype = torch_dtype(case.dtype)
    if not judges_informativeness(dtype):
        return None
    golden = oracle.golden.steps
    windows = [[record.train_draws[k] for record in records] for k in range(len(golden))]
    predicted = local_mean_steps(tiny_model(case.model_seed, torch.float64), windows, golden, case.lr)
    return informativeness(compare_steps(predicted, [r.steps for r in oracle.refs], golden, dtype), case.dtype)


def check_training_run(trainer_class, case: TrainerCase, device: str = "cpu") -> list[str]:
    """One whole run held to the oracle, shaped as a property check: raises ``ParityFailure`` (an
    ``AssertionError`` whose message leads with the kinds); returns a passing verdict's precision notes.

    A trainer that declares no ``eps`` runs at the published one (docs/trainer.md).
    """
    if not declares_eps(trainer_class):
        case = replace(case, eps=PUBLISHED_EPS)
    case = replace(case, device=device)
    with tempfile.TemporaryDirectory(prefix="parity-trainer-") as folder:
        record = run_trainer(trainer_class, case, folder)
    verdict = assert_verdict(trainer_verdict(case, [record]))
    return [comparison.describe() for comparison in verdict.notes]
