"""Which objective a trainer computes, when it is not the published one (docs/trainer.md, Naming the objective).

A ``normalisation`` failure says a tensor is off by a ratio; the reader needs to know *which*
objective the trainer follows instead. Every objective a trainer may be found computing weighs each
microbatch's 1/p-weighted sum ``S_rg`` (microbatch ``g`` of rank ``r``) by a coefficient: the step
follows the gradient of ``sum_rg c_rg S_rg`` and logs its value (DDP averages the ranks, the Trainer's
log averages their losses). So the harness replays, in float64 on the trainer's own weights before each
step, every microbatch's ``S_rg`` and its gradient once, and holds the logged losses and gradients to
each known alternative's combination, with the budgets the verdict holds them to. The first that
matches every step is named; a correct trainer matches the published objective, which the
diagnosis then leaves alone.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from oracle.nemotron_diffusion import IGNORE_INDEX
from oracle.window_reference import Draw, microbatch_sum
from parity.budget import Comparison
from parity.cases import TrainerCase
from parity.training.window_cases import tiny_model


@dataclass(frozen=True)
class Microbatch:
    """What a coefficient may depend on: microbatch ``g`` of rank ``r``, its window and the run."""

    masked: int  # realized masked tokens
    supervised: int  # labels != -100, as served
    tokens: int  # rows x length, padding included
    rows: int
    window: int  # microbatches of the rank's window (the accumulation steps)
    rank_masked: int  # realized masked tokens of the rank's window
    all_masked: int  # ... of every rank's window
    world: int


@dataclass(frozen=True)
class Objective:
    """One objective, as ``sum_rg coefficient(g) * S_rg``, and the words that name it."""

    name: str
    words: str
    coefficient: Callable[[Microbatch], float]


def _per_microbatch(count: str, words: str) -> list[Objective]:
    """Each microbatch divided by its own ``count``, summed over the window or averaged (the Trainer
    divides by the accumulation steps when the loss says it is not scaled for them)."""
    return [
        Objective(f"{count}, summed", f"sum_g S_g / {words} of microbatch g, summed over the window's microbatches",
                  lambda m: 1 / (m.world * max(getattr(m, count), 1))),
        Objective(f"{count}, averaged", f"mean_g(S_g / {words} of microbatch g), averaged over the window's microbatches",
                  lambda m: 1 / (m.world * m.window * max(getattr(m, count), 1))),
    ]


def published(case: TrainerCase) -> Objective:
    if case.average_tokens_across_devices:
        return Objective("published", "sum S / sum N over the window and every rank", lambda m: 1 / max(m.all_masked, 1))
    return Objective(
        "published", "each rank's sum S_r / N_r over its window, the ranks averaged (average_tokens_across_devices=False)",
        lambda m: 1 / (m.world * max(m.rank_masked, 1)),
    )


def alternatives(case: TrainerCase, world: int) -> list[Objective]:
    """The known wrong objectives for ``case`` on ``world`` ranks (docs/trainer.md, Naming the objective)."""
    right = published(case).coefficient
    known = [
        Objective("local mean", "mean_g(S_g / N_g), the local mean: each microbatch divided by its own realized masked "
                  "count N_g, averaged over the window's microbatches", lambda m: 1 / (m.world * m.window * max(m.masked, 1))),
        Objective("sum of microbatch means", "sum_g S_g / N_g: each microbatch divided by its own realized masked count N_g, "
                  "summed over the window's microbatches", lambda m: 1 / (m.world * max(m.masked, 1))),
        *_per_microbatch("supervised", "M_g with M_g the supervised tokens (labels != -100)"),
        *_per_microbatch("tokens", "T_g with T_g all the tokens (rows x length, padding included)"),
        *_per_microbatch("rows", "B_g with B_g the rows"),
        Objective("divided twice", f"{published(case).words}, divided once more by the accumulation steps G_r: the window's "
                  "count, then the Trainer's division by the accumulation steps", lambda m: right(m) / m.window),
    ]
    if case.average_tokens_across_devices and world > 1:
        known.append(Objective(
            "rank-local", "each rank's sum S_r / N_r over its own window count, the ranks averaged, where the count over "
            "every rank was asked (average_tokens_across_devices=True)", lambda m: 1 / (m.world * max(m.rank_masked, 1))))
    return known


@dataclass
class _Step:
    """Step k replayed on the trainer's weights before it: every microbatch's ``S`` and gradient."""

    microbatches: list[Microbatch]
    sums: list[torch.Tensor]
    grads: list[dict[str, torch.Tensor]]

    def combine(self, objective: Objective) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        weights = [objective.coefficient(m) for m in self.microbatches]
        loss = sum(w * s for w, s in zip(weights, self.sums, strict=True))
        names = self.grads[0]
        return torch.as_tensor(loss), {n: sum(w * g[n] for w, g in zip(weights, self.grads, strict=True)) for n in names}


def _replayed_steps(case: TrainerCase, windows: Sequence[Sequence[Sequence[Draw]]], before: Sequence[dict]) -> list[_Step]:
    """``windows[k][r]``: step k's microbatches on rank r; ``before[k]``: the weights step k started from."""
    model = tiny_model(case.model_seed, case.weights_dtype).to("cpu", torch.float64)
    eos = model.config.eos_token_id
    steps = []
    for ranks, weights in zip(windows, before, strict=True):
        with torch.no_grad():
            for name, p in model.named_parameters():
                p.copy_(weights[name].to(torch.float64))
        all_masked = sum(int(d.masked_indices.sum()) for rank in ranks for d in rank)
        step = _Step([], [], [])
        for rank in ranks:
            rank_masked = sum(int(d.masked_indices.sum()) for d in rank)
            for draw in rank:
                model.zero_grad(set_to_none=True)
                total, masked = microbatch_sum(model, draw, eos)
                total.backward()
                labels = draw.batch.get("labels")
                ids = draw.batch["input_ids"]
                supervised = int((labels != IGNORE_INDEX).sum()) if labels is not None else ids.numel()
                step.microbatches.append(
                    Microbatch(masked, supervised, ids.numel(), ids.shape[0], len(rank), rank_masked, all_masked, len(ranks))
                )
                step.sums.append(total.detach())
                step.grads.append({n: torch.zeros_like(p) if p.grad is None else p.grad.detach().clone()
                                   for n, p in model.named_parameters()})
        steps.append(step)
    return steps


def _budgets(comparisons: Sequence[Comparison]) -> dict[tuple[int, str, str | None], Comparison]:
    """Rank 0's (or the single rank's) step comparisons, by (step, quantity, tensor)."""
    return {(c.step, c.quantity, c.tensor): c for c in comparisons if c.step is not None and c.rank in (None, 0)
            and c.quantity in ("loss", "grad")}


def _matches(out, combined: tuple[torch.Tensor, dict], budgets: dict, step: int, skipped: bool) -> bool:
    """Whether the logged loss and gradients of ``step`` are ``combined``'s within their budgets (each
    budget scaled up where the alternative's magnitude is the larger: its rounding is too)."""
    loss, grads = combined
    comparison = budgets[(step, "loss", None)]
    scale = max(1.0, abs(float(loss)) / max(abs(comparison.golden_value), 1e-300))
    if abs(float(out.loss) - float(loss)) > comparison.budget * scale:
        return False
    if skipped:
        return True
    magnitude = max((float(g.abs().max()) for g in grads.values() if g.numel()), default=0.0)
    for name, expected in grads.items():
        comparison = budgets[(step, "grad", name)]
        got = out.grads[name]
        got = torch.zeros_like(expected) if got is None else got.to(torch.float64)
        scale = max(1.0, magnitude / max(comparison.magnitude, 1e-300))
        if expected.numel() and float((got - expected).abs().max()) > comparison.budget * scale:
            return False
    return True


def _ratios(out, combined: tuple[torch.Tensor, dict], step: int) -> str:
    """out / published, for the loss and each gradient (least squares), at ``step``."""
    loss, grads = combined
    ratios = []
    for name, expected in grads.items():
        got = out.grads[name]
        if got is not None and float((expected * expected).sum()) > 0:
            ratios.append((float((got.double() * expected).sum() / (expected * expected).sum()), name))
    text = f"step {step}: logged loss {float(out.loss) / float(loss):.3f} x the published objective's" if float(loss) else \
        f"step {step}: logged loss {float(out.loss):.3g} where the published objective is 0"
    if ratios:
        low, high = min(ratios), max(ratios)
        text += (f"; gradients {low[0]:.3f} x on every tensor" if f"{low[0]:.3f}" == f"{high[0]:.3f}" else
                 f"; gradients {low[0]:.3f} x ({low[1]}) to {high[0]:.3f} x ({high[1]}) over {len(ratios)} tensors")
    return text


def name_objective(case: TrainerCase, records: Sequence, comparisons: Sequence[Comparison]) -> str | None:
    """The sentence naming the objective a run's training steps follow, when it is a known wrong one;
    "matches none of the known alternatives" with the measured ratios when none is; None when the
    logged losses and gradients follow the published objective on the trainer's own weights (the
    failure lies elsewhere: evaluation, or the update)."""
    first = records[0]
    initial = {n: p.detach() for n, p in tiny_model(case.model_seed, case.weights_dtype).named_parameters()}
    before = [initial, *(s.params for s in first.steps[:-1])]
    windows = [[record.train_draws[k] for record in records] for k in range(len(first.steps))]
    steps = _replayed_steps(case, windows, before)
    budgets = _budgets(comparisons)
    skipped = [bool(first.skipped and first.skipped[k]) for k in range(len(steps))]

    def follows(objective: Objective) -> bool:
        return all(_matches(first.steps[k], step.combine(objective), budgets, k, skipped[k]) for k, step in enumerate(steps))

    right = published(case)
    if follows(right):
        return None
    known = alternatives(case, len(records))
    named = [objective for objective in known if follows(objective)]
    if named:
        also = "".join(f" (on this run, equally: {o.words})" for o in named[1:])
        return (
            f"this trainer computes {named[0].words}{also}: it matches the logged losses and gradients of every step within "
            f"budget; the published objective is {right.words} (docs/trainer.md, What one optimizer step must follow)"
        )
    worst = next(k for k, step in enumerate(steps) if not _matches(first.steps[k], step.combine(right), budgets, k, skipped[k]))
    return (
        f"matches none of the known alternatives ({', '.join(o.name for o in known)}); "
        f"{_ratios(first.steps[worst], steps[worst].combine(right), worst)}"
    )
