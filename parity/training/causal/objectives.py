"""Which normalisation a causal-LM run follows, when it is not the window rule (docs/causal-lm.md, Naming the
objective).

Every way a causal-LM loop has been found dividing its loss weighs each row's summed next-token cross-entropy
``S_row`` by a coefficient that depends on where the row sits: its microbatch's supervised count, its own, the
rank's, the window's over every rank, counted after the shift or before it, the accumulation steps. So the
harness replays, in float64 on the run's own weights before each step, every row's ``S_row`` and its gradient
once, and holds rank 0's logged loss and gradients to each objective's combination, within the significance
margin (``parity.training.step_compare.SIGNIFICANT`` budgets: a correct formula's float path may exceed
one budget, a wrong one lies orders of magnitude away). The first that explains every step is named. A step whose
loss or gradients are not finite is named by the microbatch (or row) that supervises nothing, its own mean 0/0, and
the objective is named on the steps before it. Where none explains the run, the terms are read
(:mod:`parity.training.causal.objective_terms`): the same rows with their documents joined (a forward that lets them
attend to each other), then the weight each microbatch, or else each row, carries, fitted to the gradients.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch

from oracle.causal_lm import Row, document_sum, window_loss
from parity.budget import Comparison
from parity.training.causal.objective_terms import (
    counted_before,
    departing_words,
    divided_by_nothing,
    finite_step,
    fit_weights,
    joined_sum,
)
from parity.training.causal.record import CausalCase, CausalRecord, starting_model, step_windows
from parity.training.step_compare import SIGNIFICANT, step_budgets


@dataclass(frozen=True)
class Place:
    """What a row's coefficient may depend on."""

    row: int  # the row's supervised positions after the shift
    row_before: int  # ... before the shift (labels != -100 as served, the first label included)
    rows: int  # of its microbatch
    microbatch: int  # the microbatch's supervised positions after the shift
    microbatch_before: int  # ... before the shift, on the labels as served
    window: int  # microbatches of the rank's window (the accumulation steps)
    rank: int  # the rank's window's supervised positions after the shift
    all: int  # every rank's
    all_before: int  # every rank's, before the shift, on the labels as served
    world: int


@dataclass(frozen=True)
class CausalObjective:
    """``coefficient``: each row's weight in the loss the run logs and in its gradients; ``backward_divisor``: what
    the gradients alone are divided by again (accelerate's backward dividing by its accumulation steps a loss the
    Trainer has already normalised, the logged loss left as it was)."""

    name: str
    words: str
    coefficient: Callable[[Place], float]
    backward_divisor: float = 1.0


def divided_again_in_backward(objective: CausalObjective, steps: int) -> CausalObjective:
    """``objective`` with its gradients (not its logged loss) divided again by the configured accumulation steps, a
    partial last window's too: transformers 5.5.0 to 5.5.3 hand accelerate their accumulation steps, and its
    ``backward`` divides by them a loss already divided by the window's count, logged before that division."""
    words = "the window rule's count" if objective.name.startswith("window") else objective.words
    return CausalObjective(f"{objective.name}, its backward divided again", f"{words}; its gradients then divided "
                           f"again by the {steps} accumulation steps in accelerate's backward, the loss it logs not: "
                           "transformers 5.5.0 to 5.5.3", objective.coefficient, backward_divisor=steps)


def published(case: CausalCase) -> CausalObjective:
    if case.average_tokens_across_devices:
        return CausalObjective("window", "sum of CE over the window and every rank / N, N the supervised positions after "
                               "the shift over the window and every rank", lambda p: 1 / max(p.all, 1))
    return CausalObjective("window per rank", "each rank's sum of CE over its window / its own N, the ranks averaged "
                           "(average_tokens_across_devices=False)", lambda p: 1 / (p.world * max(p.rank, 1)))


def alternatives(case: CausalCase, world: int) -> list[CausalObjective]:
    """The known wrong normalisations (docs/causal-lm.md, Naming the objective): each also with its gradients divided
    again in accelerate's backward (:func:`divided_again_in_backward`), where a window has several microbatches."""
    right_objective = published(case)
    right = right_objective.coefficient
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
                        "on the labels as served (the first label of each row counted, though nothing predicts it; a "
                        "packed row's later documents served theirs as -100): transformers 5.5 to 5.9",
                        lambda p: right(p) * max(p.all, 1) / max(p.all_before, 1)),
        CausalObjective("mean times its count before the shift", "each microbatch's mean after the shift times its "
                        "count before it (labels != -100 as served), the window's sum of those over its count before "
                        "the shift over every rank: torchtune 0.6.1's full-finetune recipe "
                        "(recipes/full_finetune_distributed.py:778-829)",
                        lambda p: p.microbatch_before / (max(p.microbatch, 1) * max(p.all_before, 1))),
        CausalObjective("divided twice", "the window's count, then divided again by the accumulation steps",
                        lambda p: right(p) / p.window),
    ]
    if world > 1:
        known.append(CausalObjective(
            "rank-local" if case.average_tokens_across_devices else "ranks summed",
            "each rank's sum / its own count, the ranks averaged, where the count over every rank was asked"
            if case.average_tokens_across_devices else "every rank's sum / the count over every rank, the ranks' "
            "gradients then averaged", lambda p: 1 / (p.world * max(p.rank if case.average_tokens_across_devices else p.all, 1))))
    if case.window_size > 1:  # with one microbatch a window, dividing again by the steps changes nothing
        known += [divided_again_in_backward(objective, case.window_size) for objective in (right_objective, *known)]
    return known


def _places(ranks: Sequence[Sequence[Sequence[Row]]]) -> list[Place]:
    """Every row of one step's window, rank by rank, microbatch by microbatch."""
    every = sum(row.supervised for microbatches in ranks for m in microbatches for row in m)
    every_before = sum(counted_before(row) for microbatches in ranks for m in microbatches for row in m)
    places = []
    for microbatches in ranks:
        rank = sum(row.supervised for m in microbatches for row in m)
        for microbatch in microbatches:
            count = sum(row.supervised for row in microbatch)
            count_before = sum(counted_before(row) for row in microbatch)
            places += [Place(row.supervised, counted_before(row), len(microbatch), count, count_before, len(microbatches), rank,
                             every, every_before, len(ranks)) for row in microbatch]
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

    def combine(self, objective: CausalObjective | Sequence[float]) -> tuple[float, dict[str, torch.Tensor]]:
        """The loss and gradients of ``objective`` (or of one weight per row) on this step's rows."""
        weights = ([objective.coefficient(place) for place in self.places] if isinstance(objective, CausalObjective)
                   else list(objective))
        loss = sum(w * s for w, s in zip(weights, self.sums, strict=True))
        divisor = objective.backward_divisor if isinstance(objective, CausalObjective) else 1.0
        return loss, {n: sum(w * g[n] for w, g in zip(weights, self.grads, strict=True)) / divisor for n in self.grads[0]}


def _replayed(case: CausalCase, records: Sequence[CausalRecord], joined: bool = False, until: int | None = None) -> list[_Step]:
    """The steps before ``until`` (every one by default) replayed; ``joined``: each row's documents joined, attending
    to each other (:func:`parity.training.causal.objective_terms.joined_sum`)."""
    model = starting_model(case, records, torch.float64, "cpu")
    starts = [dict(model.named_parameters()), *(s.params for s in records[0].steps[:-1])]
    steps = []
    for ranks, weights in list(zip(step_windows(records), starts, strict=True))[:until]:
        with torch.no_grad():
            for name, parameter in model.named_parameters():
                parameter.copy_(weights[name].to(torch.float64))
        sums, grads = [], []
        for row in (row for microbatches in ranks for microbatch in microbatches for row in microbatch):
            model.zero_grad(set_to_none=True)
            total = joined_sum(model, row) if joined else sum(document_sum(model, document) for document in row.documents)
            total.backward()
            sums.append(total.item())
            grads.append({n: _grad(p).detach().clone() for n, p in model.named_parameters()})
        step = _Step(_places(ranks), sums, grads)
        model.zero_grad(set_to_none=True)
        if joined:  # the window rule as the joined rows give it: its own error is the rows' sum against itself
            step.own_error = {}
            steps.append(step)
            continue
        window_loss(model, ranks, rank_local=not case.average_tokens_across_devices).backward()
        _, combined = step.combine(published(case))
        step.own_error = {n: float((_grad(p) - combined[n]).abs().max()) for n, p in model.named_parameters()}
        steps.append(step)
    return steps


def _grad(parameter: torch.Tensor) -> torch.Tensor:
    return torch.zeros_like(parameter) if parameter.grad is None else parameter.grad


def _miss(logged, step: _Step, objective: CausalObjective, budgets: dict, k: int, loss: bool = True) -> float:
    """How far step ``k``'s logged loss and gradients lie from ``objective``'s, in budgets (the loss's first: where it
    alone rejects an objective, the gradients are not read; each gradient's budget widened by twice the replay's own
    error on it). ``loss=False``: the gradients alone (a step whose logged loss is not finite)."""
    combined, grads = step.combine(objective)
    miss = 0.0
    if loss:
        miss = abs(float(logged.loss) - combined) / max(budgets[(k, "loss", None)].own_budget, 1e-300)
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


def _only_the_loss(case: CausalCase, records: Sequence[CausalRecord], comparisons: Sequence[Comparison],
                   right: CausalObjective, usable: int) -> str | None:
    """The words for a run whose first non-finite step is non-finite in its logged loss alone, every gradient of it
    and of the steps before it following the window rule (a loss that logs its microbatches' own means, 0/0 where
    one supervises nothing, but weighs their gradients by the window's count, as torchtune's recipe does); else None.
    A window in which no rank supervises anything tells nothing this way: every objective's gradient is zero there."""
    step = records[0].steps[usable]
    window = step_windows(records)[usable]
    if not any(row.supervised for ranks in window for microbatch in ranks for row in microbatch):
        return None
    if not all(grad is None or bool(torch.isfinite(grad).all()) for grad in step.grads.values()):
        return None
    budgets = step_budgets(comparisons)
    if not all((usable, "grad", name) in budgets for name in step.grads):
        return None
    replayed = _replayed(case, records, until=usable + 1)
    if max(_miss(records[0].steps[k], s, right, budgets, k, loss=k != usable) for k, s in enumerate(replayed)) > SIGNIFICANT:
        return None
    return (f"only the loss the run logs is NaN, every gradient it was handed follows the window rule ({right.words}) "
            f"within {SIGNIFICANT:g} x its budget: the logged loss divides by zero, the update does not "
            "(docs/causal-lm.md, Naming the objective)")


def name_causal_objective(case: CausalCase, records: Sequence[CausalRecord], comparisons: Sequence[Comparison]) -> str | None:
    """The sentence naming the normalisation the run follows when it is a known wrong one, with the margin by which the
    window rule misses it; a NaN from a microbatch (or row) that supervises nothing named as such, beside the
    objective of the steps before it; a forward that joins a row's documents named as the forward's fault; else the
    weights that depart, term by term. None when the window rule explains the run (the failure lies in the update),
    or when a step is not finite for another reason (the measured diagnosis says which tensor)."""
    logged = records[0].steps
    usable = next((k for k, step in enumerate(logged) if not finite_step(step)), len(logged))
    nan = None
    if usable < len(logged):
        empty = divided_by_nothing(step_windows(records)[usable])
        if empty is None:
            return None
        nan = f"step {usable}: {empty}"
    right = published(case)
    if nan and (only_loss := _only_the_loss(case, records, comparisons, right, usable)):
        return f"step {usable}: {only_loss}; {empty}"
    if nan and not usable:
        own = "row" if empty.startswith("a row") else "microbatch"
        return (f"{nan}; the run divides each {own} by its own count (a per-{own} mean), where the window rule is "
                f"{right.words} (docs/causal-lm.md, Naming the objective)")
    steps = _replayed(case, records, until=usable)
    budgets = step_budgets(comparisons)

    def misses(objective, replayed=steps) -> float:
        return max(_miss(logged[k], step, objective, budgets, k) for k, step in enumerate(replayed))

    before = f"{nan}; on the steps before it, " if nan else ""
    missed = misses(right)
    if missed <= SIGNIFICANT:
        return f"{before}the run follows the window rule" if nan else None
    known = alternatives(case, len(records))
    named = [objective for objective in known if misses(objective) <= SIGNIFICANT]
    if named:
        also = "".join(f" (on this run, equally: {o.words})" for o in named[1:])
        return (f"{before}this run computes {named[0].words}{also}: it matches the logged losses and gradients of every "
                f"step within {SIGNIFICANT:g} x their budgets, where the window rule misses them by {missed:.1e} x; the "
                f"window rule is {right.words} (docs/causal-lm.md, Naming the objective)")
    bases = [o.name for o in known if o.backward_divisor == 1]
    again = ", each also with its backward divided again" if len(bases) < len(known) else ""
    none = (f"{before}matches none of the known normalisations ({', '.join(bases)}{again}); the window rule misses the "
            f"run by {missed:.1e} x its budget")
    if any(len(row.documents) > 1 for ranks in step_windows(records)[:usable] for microbatches in ranks
           for microbatch in microbatches for row in microbatch):
        joined = _replayed(case, records, joined=True, until=usable)
        for objective in (right, *known):
            if misses(objective, joined) <= SIGNIFICANT:
                count = "" if objective is right else f", and it computes {objective.words}"
                return (f"{before}the forward lets the documents of a packed row attend to each other (position_ids "
                        f"dropped or not used to keep them apart): with each row's documents joined the run follows "
                        f"the window rule's count{count}, within {SIGNIFICANT:g} x its budgets, where with them apart "
                        f"the window rule misses it by {missed:.1e} x; the same rows unpacked, one document a row, "
                        "leave the forward nothing to join (docs/causal-lm.md, Naming the objective)")
    return f"{none}; {_by_terms(case, steps, logged, budgets, records)}"


def _by_terms(case: CausalCase, steps: Sequence[_Step], logged, budgets, records) -> str:
    """The weight each microbatch carries in the run's gradients, fitted and held beside the window rule's; each row's
    where no weighting of the microbatches explains the run (docs/causal-lm.md, Naming the objective)."""
    right = published(case)
    ranked = len(records) > 1
    for grain in ("microbatch", "row"):
        departures, explained = [], True
        for k, step in enumerate(steps):
            groups, where = [], []
            i = 0
            for r, microbatches in enumerate(step_windows(records)[k]):
                for g, microbatch in enumerate(microbatches):
                    rows = list(range(i, i + len(microbatch)))
                    i += len(microbatch)
                    on = f"{f'rank {r} ' if ranked else ''}microbatch {g}"
                    after = sum(row.supervised for row in microbatch)
                    counted = sum(counted_before(row) for row in microbatch)
                    if grain == "microbatch":
                        groups.append(rows)
                        where.append(f"step {k} {on} ({after} supervised after the shift, {counted} before)")
                    else:
                        groups += [[j] for j in rows]
                        where += [f"step {k} {on} row {j - rows[0]} ({step.places[j].row} supervised after the shift, "
                                  f"{step.places[j].row_before} before)" for j in rows]
            fitted = fit_weights(step.grads, groups, logged[k].grads)
            weights = [0.0] * len(step.places)
            for group, weight in zip(groups, fitted, strict=True):
                for j in group:
                    weights[j] = right.coefficient(step.places[j]) if weight is None else weight
            explained = explained and _miss(logged[k], step, weights, budgets, k) <= SIGNIFICANT
            departures += [(said, weight, right.coefficient(step.places[group[0]]))
                           for said, group, weight in zip(where, groups, fitted, strict=True) if weight is not None]
        words = departing_words(departures, grain)
        if explained and words:
            return (f"term by term, one weight per {grain} explains the run within {SIGNIFICANT:g} x its budgets: {words} "
                    "(docs/causal-lm.md, Naming the objective)")
    return ("term by term, no weight per microbatch or per row explains the run's gradients: the run computes something "
            "other than a weighted sum of its rows' losses (a different forward, a different loss; docs/causal-lm.md, "
            "Naming the objective)")
