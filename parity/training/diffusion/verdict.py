"""The oracle beside a whole training run, and the run's verdict.

The oracle is full-window SGD on the draws the run was replayed to have used: one reference step
per window over every rank's rows (``oracle.window_reference``), then the evaluation losses, in a
given dtype and order: the golden (float64, CPU) and the working-dtype references the budget is
derived from (docs/budget.md). The verdict holds a run's findings (noise, crash) and, when every
rank trained on draws the replay explained, every rank's steps, evaluation loss and
``prediction_step`` losses against the oracle's, each within its budget.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import torch

from oracle.window_reference import StepResult, sgd_step, single_batch_loss
from parity.budget import Comparison, along_trajectory, before_each, compare_tensor, informativeness, judges_informativeness
from parity.cases import TrainerCase
from parity.compare import Finding, Verdict, judge
from parity.devices import LOWER_DTYPE, torch_dtype
from parity.training.diffusion.drivers.trainer_run import TrainerRecord
from parity.training.diffusion.drivers.window_cases import tiny_model
from parity.training.diffusion.drivers.window_run import local_mean_steps
from parity.training.diffusion.objectives import name_objective
from parity.training.step_compare import compare_steps


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
    along: Sequence[StepResult] | None = None,
) -> OracleRun:
    """The oracle over every rank's rows: step k is window k of all ranks; then its evaluation losses.

    ``along``: the target's steps (as observed), when each step k > 0 is to start from the target's
    parameters before it: the reference along the target's trajectory (``parity.budget.along_trajectory``).
    Its evaluation losses are then taken on the target's parameters after its last step: evaluation
    is judged on what it adds, the trained parameters being held to their own budgets.
    """
    model = tiny_model(case.model_seed, case.weights_dtype).to(device, dtype)
    eos = model.config.eos_token_id
    skipped = skipped_steps(records)
    if not all(record.judged("train") for record in records) and records[0].steps:
        # Training is not judged (its noise could not be replayed): evaluation is held on the
        # target's own trained weights, so that its finding does not hide evaluation's comparison.
        with torch.no_grad():
            for name, p in model.named_parameters():
                p.copy_(records[0].steps[-1].params[name].to(device, dtype))
        records, along = [replace(record, train_draws=[]) for record in records], None
    windows = [[record.train_draws[k][::-1] if reverse else record.train_draws[k] for record in records]
               for k in range(len(records[0].train_draws))]

    def step(m, k: int, ranks) -> StepResult:
        lr = 0.0 if skipped[k] else case.lr  # the loss scaler's skipped step leaves the parameters as they were
        return sgd_step(m, ranks, eos, lr, rank_local=not case.average_tokens_across_devices)

    starts = [None] * len(windows) if along is None else before_each(along)
    steps = along_trajectory(model, windows, step, starts)
    with torch.no_grad():
        if along:  # evaluation, like every step after the first, from where the target is (docs/budget.md)
            for name, p in model.named_parameters():
                p.copy_(along[-1].params[name].to(device, dtype))
        eval_loss = _weighted_eval(model, records, eos, total_rows=case.examples_per_rank * len(records))
        batch_losses = [[single_batch_loss(model, draw, eos) for draw in record.batch_draws] for record in records]
    return OracleRun(steps, eval_loss, batch_losses)


def skipped_steps(records: Sequence[TrainerRecord]) -> list[bool]:
    """Per step, whether the loss scaler skipped it (``fp16=True``; never otherwise). The scaler's
    overflow check is taken over every rank's reduced gradients, so the ranks agree."""
    steps = len(records[0].train_draws)
    skipped = [bool(records[0].skipped and records[0].skipped[k]) for k in range(steps)]
    if any(bool(record.skipped and record.skipped[k]) != skipped[k] for record in records for k in range(steps)):
        raise AssertionError(f"the ranks' loss scalers disagree on which steps they skipped: {[r.skipped for r in records]}")
    return skipped


def golden_run(case: TrainerCase, records: Sequence[TrainerRecord]) -> OracleRun:
    """The oracle in float64 on the CPU."""
    return oracle_run(case, records, torch.float64, "cpu")


@dataclass
class References:
    """The golden, the valid evaluations in the working dtype, and (once a tensor fails) the oracle
    one dtype lower, whose budget names a precision finding."""

    golden: OracleRun
    refs: list[OracleRun]
    lower: list[OracleRun] = field(default_factory=list)


#: The first reference (each window reversed) follows the oracle's own trajectory; the next starts each
#: step, and evaluation, from the target's parameters. The first alone gives the budget a correct target gets at a step
#: (``parity.budget.Comparison.own_budget``, what the report plots against).
OWN_TRAJECTORY_REFS = 1


def references(case: TrainerCase, records: Sequence[TrainerRecord]) -> References:
    """References (docs/budget.md): the oracle in the working dtype in order along the target's own
    trajectory (step 0 from the seeded weights, each later step from the target's parameters before
    it), and with each window reversed along its own. The oracle one dtype lower (``LOWER_DTYPE``) is added by ``trainer_verdict`` only once a
    tensor is outside its budget: naming a precision finding is all it is for."""
    dtype = torch_dtype(case.dtype)
    along = oracle_run(case, records, dtype, case.device, along=records[0].steps)
    return References(golden_run(case, records), [oracle_run(case, records, dtype, case.device, reverse=True), along])


def trainer_comparisons(
    case: TrainerCase, records: Sequence[TrainerRecord], oracle: References | None = None, evaluation: bool = True
) -> list[Comparison]:
    """Every rank's steps (when training is judged), evaluation loss and per-batch losses (when
    ``evaluation`` is) against the oracle's, each within its budget, its floor a rounding of the
    working precision (the logged losses pass through the Trainer's float32 accumulator, but carry
    the working precision's arithmetic)."""
    oracle = oracle or references(case, records)
    golden, refs, lower = oracle.golden, oracle.refs, oracle.lower
    precision = torch_dtype(case.dtype)
    lower_precision = torch_dtype(LOWER_DTYPE[case.dtype]) if lower else None
    skipped = skipped_steps(records)
    comparisons = []
    for rank, record in enumerate(records):
        on_rank = rank if len(records) > 1 else None
        prefix = f"rank {rank} " if len(records) > 1 else ""
        identity = dict(precision=precision, lower_precision=lower_precision, rank=on_rank)
        if golden.steps:
            comparisons += compare_steps(
                record.steps, [r.steps for r in refs], golden.steps, precision, lower=[r.steps for r in lower],
                lower_precision=lower_precision, rank=on_rank, skipped=skipped, own_refs=OWN_TRAJECTORY_REFS,
            )
        if not evaluation:
            continue
        if record.eval_loss is not None and golden.eval_loss is not None:
            out = torch.tensor(record.eval_loss, dtype=torch.float32)
            eval_refs = [r.eval_loss.to("cpu", torch.float32) for r in refs]
            comparisons.append(
                compare_tensor(
                    f"{prefix}eval loss", out, eval_refs, golden.eval_loss, lower_refs=[r.eval_loss for r in lower],
                    quantity="eval loss", own_refs=OWN_TRAJECTORY_REFS, **identity,
                )
            )
        batches = len(golden.batch_losses[rank])
        if len(record.batch_losses) != batches:
            raise AssertionError(f"{len(record.batch_losses)} prediction_step losses for {batches} batches")
        for b, loss in enumerate(record.batch_losses):
            comparisons.append(
                compare_tensor(
                    f"{prefix}prediction_step batch {b} loss",
                    loss.reshape(()),
                    [r.batch_losses[rank][b] for r in refs],
                    golden.batch_losses[rank][b],
                    lower_refs=[r.batch_losses[rank][b] for r in lower],
                    quantity="batch loss",
                    own_refs=OWN_TRAJECTORY_REFS,
                    **identity,
                )
            )
    return comparisons


def uninformative(case: TrainerCase, records: Sequence[TrainerRecord], oracle: References) -> str | None:
    """Why a passing verdict says nothing about the gradients, or None: in a float16 run the loss
    scaler skipped every step; in a bfloat16 or float16 run the case cannot tell the local-mean bug
    from rounding (``parity.compare.informativeness``; the prediction is the float64 oracle's, on the
    replayed draws)."""
    skipped = skipped_steps(records)
    if skipped and all(skipped):
        scales = ", ".join(f"{scale:g}" for scale in records[0].loss_scales)
        return (
            f"not informative at {case.dtype} about gradients and updates: the loss scaler skipped every optimizer "
            f"step (the scaled gradients overflowed at loss scales {scales}); only the losses were judged"
        )
    if not judges_informativeness(torch_dtype(case.dtype)):
        return None
    return informativeness(local_mean_prediction(case, records, oracle), case.dtype)


def local_mean_prediction(case: TrainerCase, records: Sequence[TrainerRecord], oracle: References) -> list[Comparison]:
    """What the local-mean normalisation would do to this run, as the float64 oracle predicts it on the
    replayed draws, held to the run's budgets as if it were the target (``parity.budget.informativeness``)."""
    skipped = skipped_steps(records)
    golden = oracle.golden.steps
    windows = [[record.train_draws[k] for record in records] for k in range(len(golden))]
    model = tiny_model(case.model_seed, case.weights_dtype).to("cpu", torch.float64)
    predicted = local_mean_steps(model, windows, golden, case.lr, skipped)
    return compare_steps(predicted, [r.steps for r in oracle.refs], golden, torch_dtype(case.dtype), skipped=skipped)


def unscaled_overflows(records: Sequence[TrainerRecord]) -> list[Finding]:
    """A step the loss scaler skipped at a scale of 1 or less: its gradients are not finite without
    any scaling, which no rounding explains (a skip above 1 is the scaler doing its job)."""
    ranked = len(records) > 1
    return [
        Finding(
            "mismatch",
            f"the loss scaler skipped this step at loss scale {scale:g}: the gradients are not finite even unscaled",
            step,
            rank if ranked else None,
        )
        for rank, record in enumerate(records)
        for step, (scale, skipped) in enumerate(zip(record.loss_scales, record.skipped, strict=False))
        if skipped and scale <= 1.0
    ]


def non_finite(records) -> list[Finding]:
    """The first step of each rank whose loss, a gradient or a parameter is not finite: its own finding
    (docs/budget.md, Non-finite), not a tensor outside its budget (normalisation, mismatch) nor a fault of
    the oracle. A step the loss scaler skipped overflowed by definition; its gradients are not read."""
    ranked = len(records) > 1
    findings = []
    for rank, record in enumerate(records):
        for step, result in enumerate(record.steps):
            skipped = step < len(record.skipped) and record.skipped[step]
            tensors = {"loss": result.loss, **({} if skipped else {f"grad {n}": g for n, g in result.grads.items()}),
                       **{f"param {n}": p for n, p in result.params.items()}}
            bad = next(((name, t) for name, t in tensors.items() if t is not None and not bool(torch.isfinite(t).all())), None)
            if bad is not None:
                name, tensor = bad
                value = tensor.flatten()[~torch.isfinite(tensor.flatten())][0].item()
                findings.append(Finding("non-finite", f"non-finite at step {step}, first in {name} ({value})",
                                        rank=rank if ranked else None, phase="train"))
                break
    return findings


def trainer_verdict(case: TrainerCase, records: Sequence[TrainerRecord], *, strict_precision: bool | None = None) -> Verdict:
    """Findings (noise, input-contract, crash) of every rank, plus the comparisons of each phase every
    rank can be held to: training and evaluation are judged apart, so a finding in one does not hide
    the other's comparison (docs/trainer.md, Training and evaluation judged apart). A run failing
    ``normalisation`` gets its diagnosis: the objective it computes (``parity.training.diffusion.objectives``)."""
    ranked = len(records) > 1
    findings = [replace(f, rank=rank if ranked else None) for rank, r in enumerate(records) for f in r.findings]
    findings += unscaled_overflows(records)
    findings += non_finite(records)
    # Numbers that are not finite have no reference to be held to, in either phase: the finding says why.
    finite = not any(f.kind == "non-finite" for f in findings)
    train = finite and all(r.judged("train") for r in records)
    evaluation = finite and all(r.judged("evaluation") for r in records)
    if not any(r.crashed for r in records) and not train and not any(r.steps for r in records) and not findings:
        findings.append(Finding("crash", "the trainer logged no optimizer step", phase="train"))
    if not train and not evaluation:
        return judge([], findings, strict_precision=strict_precision)
    oracle = references(case, records)
    comparisons = trainer_comparisons(case, records, oracle, evaluation)
    if case.dtype in LOWER_DTYPE and not all(c.holds for c in comparisons):
        # Only a tensor outside its budget needs the lower dtype's, to be named (a precision finding or not).
        oracle.lower = [oracle_run(case, records, torch_dtype(LOWER_DTYPE[case.dtype]), case.device)]
        comparisons = trainer_comparisons(case, records, oracle, evaluation)
    verdict = judge(
        comparisons,
        findings,
        strict_precision=strict_precision,
        uninformative=uninformative(case, records, oracle) if train else None,
    )
    named = name_objective(case, records, verdict.comparisons) if train and "normalisation" in verdict.failure_kinds else None
    if named is not None:  # else the diagnosis the verdict already has, if any
        verdict.diagnosis = named
    return verdict
