"""Drive a loss target through accumulation windows the way ``transformers.Trainer`` does.

One microbatch at a time: the target's loss, divided by the window's microbatch count only when
the target says it is not scaled for accumulation (``Trainer.training_step``'s contract), then
``backward``; plain SGD once per window. The oracle side replays the realized draws through
``oracle.window_reference`` in float64 on the CPU (``golden``) and in the working dtype (``refs``:
in order along the target's own trajectory, and with each window's microbatches reversed; see
``parity.budget.along_trajectory``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import torch
from torch import nn

from oracle.window_reference import Draw, StepResult, apply_sgd, sgd_step
from parity.budget import Comparison, along_trajectory, before_each, informativeness, judges_informativeness
from parity.compare import Finding
from parity.training.diffusion.counts import count_problem
from parity.training.step_compare import compare_steps

Batch = Mapping[str, torch.Tensor]


@dataclass(frozen=True)
class NoiseSettings:
    """What the noising of a run depends on besides the batches."""

    seed: int
    eps: float = 1e-3


def _to(batch: Mapping[str, torch.Tensor | None], device: torch.device | str) -> dict[str, torch.Tensor | None]:
    return {key: None if value is None else value.to(device) for key, value in batch.items()}


def noise_windows(
    loss_target, model: nn.Module, windows: Sequence[Sequence[Batch]], noise: NoiseSettings
) -> list[list[dict[str, torch.Tensor | None]]]:
    """Every window noised by the target, in order, from one CPU generator."""
    generator = torch.Generator().manual_seed(noise.seed)
    device = next(model.parameters()).device
    config = model.config
    return [
        loss_target.prepare_window(
            [_to(batch, device) for batch in window],
            mask_token_id=config.mask_token_id,
            eos_token_id=config.eos_token_id,
            eps=noise.eps,
            generator=generator,
            vocab_size=config.vocab_size,
        )
        for window in windows
    ]


def target_steps(
    loss_target, model: nn.Module, noised_windows: Sequence[Sequence[Mapping[str, torch.Tensor | None]]], lr: float,
    counts: list | None = None,
) -> list[StepResult]:
    """Accumulate each window microbatch by microbatch, then one SGD step; each window's count as the
    target gave it is appended to ``counts``."""
    results = []
    for window in noised_windows:
        model.zero_grad(set_to_none=True)
        count = loss_target.window_count(window)
        if counts is not None:
            counts.append(count)
        window_loss = torch.zeros((), dtype=next(model.parameters()).dtype, device=next(model.parameters()).device)
        for batch in window:
            loss = loss_target.microbatch_loss(model, batch, count)
            if not loss_target.loss_is_scaled_for_ga:
                loss = loss / len(window)
            # A window that masks nothing must still backpropagate a zero: every rank's backward joins DDP's
            # all-reduce (docs/trainer.md, Two ranks); a detached loss is the target's finding, not a harness error.
            assert loss.requires_grad, (
                f"window {len(results)}: microbatch_loss returned {loss.detach()!r} without a gradient path (no "
                "backward can run; on two ranks this rank would skip DDP's all-reduce)"
            )
            loss.backward()
            window_loss = window_loss + loss.detach()
        results.append(apply_sgd(model, window_loss, lr))
    return results


def realized_draws(
    windows: Sequence[Sequence[Batch]], noised_windows: Sequence[Sequence[Mapping[str, torch.Tensor | None]]]
) -> list[list[Draw]]:
    """The raw batches paired with the masks the target realized, on the CPU, for the oracle to replay."""
    return [
        [
            Draw(batch, noised["masked_indices"].cpu(), noised["p_mask"].cpu())
            for batch, noised in zip(window, noised_window, strict=True)
        ]
        for window, noised_window in zip(windows, noised_windows, strict=True)
    ]


def reference_steps(
    model: nn.Module, draws: Sequence[Sequence[Draw]], lr: float, along: Sequence[StepResult] | None = None
) -> list[StepResult]:
    """The oracle's steps, one per window, on the draws the target realized: along its own trajectory,
    or, given the target's steps ``along``, each step k > 0 from the target's parameters before it
    (``parity.budget.along_trajectory``)."""
    eos = model.config.eos_token_id
    starts = [None] * len(draws) if along is None else before_each(along)
    return along_trajectory(model, draws, lambda m, _, window: sgd_step(m, [window], eos, lr), starts)


@dataclass(frozen=True)
class ParityRun:
    """A target's run beside the oracle's, ready to be held to the budget."""

    out: list[StepResult]
    refs: list[list[StepResult]]
    golden: list[StepResult]
    noised: list[list[dict[str, torch.Tensor | None]]]
    draws: list[list[Draw]]

    #: The float64 oracle under the local-mean normalisation (bfloat16 runs only; see ``uninformative``).
    local_mean: list[StepResult] | None = None
    #: Each window's count as the target's ``window_count`` gave it.
    counts: list = field(default_factory=list)

    @property
    def precision(self) -> torch.dtype:
        """The working dtype: the oracle's parameters in it (a loss may be upcast, the weights are not)."""
        return next(iter(self.refs[0][0].params.values())).dtype

    def comparisons(self) -> list[Comparison]:
        return compare_steps(self.out, self.refs, self.golden, self.precision)

    def findings(self) -> list[Finding]:
        """A window's count the target keeps in a dtype that cannot hold it exactly (``parity.training.diffusion.counts``)."""
        found = []
        for step, (count, window) in enumerate(zip(self.counts, self.draws, strict=False)):
            realized = sum(int(draw.masked_indices.sum()) for draw in window)
            problem = count_problem(count, f"step {step}", realized)
            if problem:
                found.append(Finding("normalisation", problem))
        return found

    def uninformative(self) -> str | None:
        """Why this case cannot tell a wrong count from rounding at its precision, or None."""
        if self.local_mean is None:
            return None
        predicted = compare_steps(self.local_mean, self.refs, self.golden, self.precision)
        return informativeness(predicted, str(self.precision).removeprefix("torch."))


def local_mean_steps(
    model: nn.Module,
    windows: Sequence[Sequence[Sequence[Draw]]],
    golden: Sequence[StepResult],
    lr: float,
    skipped: Sequence[bool] = (),
) -> list[StepResult]:
    """What the local-mean bug would compute, by the oracle (in ``model``'s dtype): window k of all
    ranks (``windows[k][rank]``), every microbatch divided by its own count and the quotients
    averaged, each step from the golden parameters before it (and no update where the loss scaler
    ``skipped`` the step). Its distance from the golden is the bug's predicted effect, which
    ``parity.budget.informativeness`` holds to the run's budgets."""

    def step(m: nn.Module, k: int, ranks: Sequence[Sequence[Draw]]) -> StepResult:
        step_lr = 0.0 if k < len(skipped) and skipped[k] else lr
        return sgd_step(m, [[draw] for rank in ranks for draw in rank], m.config.eos_token_id, step_lr, rank_local=True)

    return along_trajectory(model, windows, step, before_each(golden))


def regroup_rows(windows: Sequence[Sequence[Mapping[str, torch.Tensor | None]]], rows: int) -> list[list[dict]]:
    """The same rows of each window, cut into microbatches of ``rows`` rows (the last may be short)."""
    regrouped = []
    for window in windows:
        joined = {
            key: None if window[0][key] is None else torch.cat([batch[key] for batch in window])
            for key in window[0]
        }
        total = joined["input_ids"].shape[0]
        regrouped.append(
            [
                {key: None if value is None else value[start : start + rows] for key, value in joined.items()}
                for start in range(0, total, rows)
            ]
        )
    return regrouped


def _regroup_draws(draws: Sequence[Sequence[Draw]], rows: int) -> list[list[Draw]]:
    as_dicts = [[{**d.batch, "masked_indices": d.masked_indices, "p_mask": d.p_mask} for d in w] for w in draws]
    return [
        [Draw({k: v for k, v in b.items() if k not in ("masked_indices", "p_mask")}, b["masked_indices"], b["p_mask"]) for b in w]
        for w in regroup_rows(as_dicts, rows)
    ]


def run_parity(
    loss_target,
    build_model: Callable[[], nn.Module],
    windows: Sequence[Sequence[Batch]],
    noise: NoiseSettings,
    *,
    lr: float,
    device: str = "cpu",
    regroup: int | None = None,
) -> ParityRun:
    """The target on ``device``, the oracle on ``device`` and in float64 on the CPU, from one set of draws.

    ``regroup`` re-cuts each window's noised rows into microbatches of that many rows before the
    target runs: the window's step must not depend on the cut. The oracle then also evaluates that
    cut in the working dtype, since it is one more valid order of the same sums.
    """
    model = build_model().to(device)
    noised = noise_windows(loss_target, model, windows, noise)
    draws = realized_draws(windows, noised)
    counts: list = []
    out = target_steps(loss_target, model, regroup_rows(noised, regroup) if regroup else noised, lr, counts)
    # The references (docs/budget.md): in order along the target's trajectory; reversed, and the target's
    # cut of the rows, along the oracle's own.
    orders = [[window[::-1] for window in draws], *([_regroup_draws(draws, regroup)] if regroup else [])]
    refs = [reference_steps(build_model().to(device), draws, lr, along=out)]
    refs += [reference_steps(build_model().to(device), order, lr) for order in orders]
    golden = reference_steps(build_model().to("cpu", torch.float64), draws, lr)
    local_mean = None
    if judges_informativeness(next(model.parameters()).dtype):
        local_mean = local_mean_steps(build_model().to("cpu", torch.float64), [[w] for w in draws], golden, lr)
    return ParityRun(out, refs, golden, noised, draws, local_mean, counts)
