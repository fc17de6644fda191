"""Which normalisation a causal-LM run follows, when it is not the window rule (docs/causal-lm.md, Naming the
objective).

Every way a causal-LM loop has been found dividing its loss weighs each row's summed next-token cross-entropy
``S_row`` by a coefficient that depends on where the row sits: its microbatch's supervised count, its own, the
rank's, the window's over every rank, counted after the shift or before it, the accumulation steps. So the
harness replays, in float64 on the run's own weights before each step, every row's ``S_row`` and its gradient
once, and holds rank 0's logged loss and gradients to each objective's combination, within the significance
margin (``parity.training.step_compare.SIGNIFICANT`` budgets: a correct formula's float path may exceed
one budget, a wrong one lies orders of magnitude away). The first that explains every step is named.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch

from oracle.causal_lm import IGNORE_INDEX, Row, document_sum, tiny_causal_lm, window_loss
from parity.budget import Comparison
from parity.devices import torch_dtype
from parity.training.causal.record import CausalCase, CausalRecord, step_windows
from parity.training.step_compare import SIGNIFICANT, step_budgets


@dataclass(frozen=True)
class Place:
    """What a row's coefficient may depend on."""

    row: int  # the row's supervised positions after the shift
    row_before: int  # ... before the shift (labels != -100, the first label included)
    rows: int  # of its microbatch
    microbatch: int  # the microbatch's supervised positions after the shift
    window: int  # microbatches of the rank's window (the accumulation steps)
    rank: int  # the rank's window's supervised positions after the shift
    all: int  # every rank's
    all_before: int  # every rank's, before the shift
    world: int


@dataclass(frozen=True)
class CausalObjective:
    name: str
    words: str
    coefficient: Callable[[Place], float]


def published(case: CausalCase) -> CausalObjective:
    if case.average_tokens_across_devices:
        return CausalObjective("window", "sum of CE over the window and every rank / N, N the supervised positions after "
                               "the shift over the window and every rank", lambda p: 1 / max(p.all, 1))
    return CausalObjective("window per rank", "each rank's sum of CE over its window / its own N, the ranks averaged "
                           "(average_tokens_across_devices=False)", lambda p: 1 / (p.world * max(p.rank, 1)))


def alternatives(case: CausalCase, world: int) -> list[CausalObjective]:
    """The known wrong normalisations (docs/causal-lm.md, Naming the objective)."""
    right = published(case).coefficient
    known = [
        CausalObjective("per-microbatch means, averaged", "each microbatch's own mean (its CE sum / its own supervised "
                        "count), averaged over the window's microbatches: transformers before 4.46; per-microbatch means "
                        "divided by num_microbatches, megatron's default without calculate_per_token_loss",
                        lambda p: 1 / (p.world * p.window * max(p.microbatch, 1))),
        CausalObjective("per-microbatch means, summed", "each microbatch's own mean, summed over the window's microbatches",
                        lambda p: 1 / (p.world * max(p.microbatch, 1))),
        CausalObjective("per-row means", "each row's own mean, the rows and the microbatches averaged",
                        lambda p: 1 / (p.world * p.window * p.rows * max(p.row, 1))),
        CausalObjective("counted before the shift", "the window's sum / the labels != -100 counted before the shift "
                        "(the first label of each row counted, though nothing predicts it)",
                        lambda p: right(p) * max(p.all, 1) / max(p.all_before, 1)),
        CausalObjective("divided twice", "the window's count, then divided again by the accumulation steps",
                        lambda p: right(p) / p.window),
    ]
    if world > 1:
        known.append(CausalObjective(
            "rank-local" if case.average_tokens_across_devices else "ranks summed",
            "each rank's sum / its own count, the ranks averaged, where the count over every rank was asked"
            if case.average_tokens_across_devices else "every rank's sum / the count over every rank, the ranks' "
            "gradients then averaged", lambda p: 1 / (p.world * max(p.rank if case.average_tokens_across_devices else p.all, 1))))
    return known


def _before(row: Row) -> int:
    return sum(label != IGNORE_INDEX for document in row.documents for label in document.labels)


def _places(ranks: Sequence[Sequence[Sequence[Row]]]) -> list[Place]:
    """Every row of one step's window, rank by rank, microbatch by microbatch."""
    every = sum(row.supervised for microbatches in ranks for m in microbatches for row in m)
    every_before = sum(_before(row) for microbatches in ranks for m in microbatches for row in m)
    places = []
    for microbatches in ranks:
        rank = sum(row.supervised for m in microbatches for row in m)
        for microbatch in microbatches:
            count = sum(row.supervised for row in microbatch)
            places += [Place(row.supervised, _before(row), len(microbatch), count, len(microbatches), rank, every,
                             every_before, len(ranks)) for row in microbatch]
    return places


@dataclass
class _Step:
    """Step k replayed on the run's weights before it: every row's sum and gradient, and where each row sits; and the
    replay's own error on each gradient (the window rule's combined from the rows against one backward of the window,
    as the oracle takes it: in a float64 run, whose model still normalises in float32, float32's rounding, which a
    float64 budget does not hold; far inside the budget in a float32 run)."""

    places: list[Place]
    sums: list[float]
    grads: list[dict[str, torch.Tensor]]
    own_error: dict[str, float] = field(default_factory=dict)

    def combine(self, objective: CausalObjective) -> tuple[float, dict[str, torch.Tensor]]:
        weights = [objective.coefficient(place) for place in self.places]
        loss = sum(w * s for w, s in zip(weights, self.sums, strict=True))
        return loss, {n: sum(w * g[n] for w, g in zip(weights, self.grads, strict=True)) for n in self.grads[0]}


def _replayed(case: CausalCase, records: Sequence[CausalRecord]) -> list[_Step]:
    model = tiny_causal_lm(case.model_seed, torch_dtype(case.dtype)).to("cpu", torch.float64)
    starts = [dict(model.named_parameters()), *(s.params for s in records[0].steps[:-1])]
    steps = []
    for ranks, weights in zip(step_windows(records), starts, strict=True):
        with torch.no_grad():
            for name, parameter in model.named_parameters():
                parameter.copy_(weights[name].to(torch.float64))
        sums, grads = [], []
        for row in (row for microbatches in ranks for microbatch in microbatches for row in microbatch):
            model.zero_grad(set_to_none=True)
            total = sum(document_sum(model, document) for document in row.documents)
            total.backward()
            sums.append(total.item())
            grads.append({n: _grad(p).detach().clone() for n, p in model.named_parameters()})
        step = _Step(_places(ranks), sums, grads)
        model.zero_grad(set_to_none=True)
        window_loss(model, ranks, rank_local=not case.average_tokens_across_devices).backward()
        _, combined = step.combine(published(case))
        step.own_error = {n: float((_grad(p) - combined[n]).abs().max()) for n, p in model.named_parameters()}
        steps.append(step)
    return steps


def _grad(parameter: torch.Tensor) -> torch.Tensor:
    return torch.zeros_like(parameter) if parameter.grad is None else parameter.grad


def _miss(logged, step: _Step, objective: CausalObjective, budgets: dict, k: int) -> float:
    """How far step ``k``'s logged loss and gradients lie from ``objective``'s, in budgets (the loss's first: where it
    alone rejects an objective, the gradients are not read; each gradient's budget widened by twice the replay's own
    error on it)."""
    loss, grads = step.combine(objective)
    comparison = budgets[(k, "loss", None)]
    miss = abs(float(logged.loss) - loss) / max(comparison.own_budget, 1e-300)
    if miss > SIGNIFICANT:
        return miss
    for name, expected in grads.items():
        comparison = budgets[(k, "grad", name)]
        got = logged.grads.get(name)
        got = torch.zeros_like(expected) if got is None else got.to(torch.float64)
        scale = max(1.0, float(expected.abs().max()) / max(comparison.magnitude, 1e-300))
        budget = (comparison.own_budget + 2 * step.own_error.get(name, 0.0)) * scale
        miss = max(miss, float((got - expected).abs().max()) / max(budget, 1e-300))
    return miss


def name_causal_objective(case: CausalCase, records: Sequence[CausalRecord], comparisons: Sequence[Comparison]) -> str | None:
    """The sentence naming the normalisation the run follows when it is a known wrong one, with the margin by which the
    window rule misses it; "matches none of the known normalisations" when none does; None when the window rule
    explains the run (the failure lies in the update)."""
    steps = _replayed(case, records)
    budgets = step_budgets(comparisons)
    logged = records[0].steps

    def misses(objective: CausalObjective) -> float:
        return max(_miss(logged[k], step, objective, budgets, k) for k, step in enumerate(steps))

    right = published(case)
    missed = misses(right)
    if missed <= SIGNIFICANT:
        return None
    known = alternatives(case, len(records))
    named = [objective for objective in known if misses(objective) <= SIGNIFICANT]
    if not named:
        return (f"matches none of the known normalisations ({', '.join(o.name for o in known)}); the window rule misses "
                f"the run by {missed:.1e} x its budget")
    also = "".join(f" (on this run, equally: {o.words})" for o in named[1:])
    return (f"this run computes {named[0].words}{also}: it matches the logged losses and gradients of every step within "
            f"{SIGNIFICANT:g} x their budgets, where the window rule misses them by {missed:.1e} x; the window rule is "
            f"{right.words} (docs/causal-lm.md, Naming the objective)")
