"""Which objective a trainer computes, when it is not the published one (docs/trainer.md, Naming the objective).

A ``normalisation`` failure says a tensor is off by a ratio; the reader needs to know *which*
objective the trainer follows instead. Every objective a trainer may be found computing weighs each
microbatch's 1/p-weighted sum ``S_rg`` (microbatch ``g`` of rank ``r``) by a coefficient: the step
follows the gradient of ``sum_rg c_rg S_rg`` and logs its value (DDP averages the ranks, the Trainer's
log averages their losses). So the harness replays, in float64 on the trainer's own weights before each
step, every microbatch's ``S_rg`` and its gradient once, and holds the logged losses and gradients to
each known alternative's combination, with the budgets the verdict holds them to. The first that
matches every step is named; a correct trainer matches the published objective, which the
diagnosis then leaves alone. When none does, the terms are judged one by one (weights fitted beside the
normalisation, :mod:`parity.training.diffusion.objective_terms`) and the nearest whole objective is named with its residual.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from oracle.window_reference import Draw, microbatch_sum
from parity.budget import Comparison
from parity.cases import TrainerCase
from parity.training.diffusion.drivers.window_cases import tiny_model
from parity.training.diffusion.objective_terms import (
    TINY_EOS,
    Microbatch,
    Nearest,
    Objective,
    alternatives,
    divided_by,
    load_weights,
    nearest_objectives,
    published,
    replay_model,
    replayed_microbatches,
)
from parity.training.step_compare import SIGNIFICANT, step_budgets


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


def _replayed_steps(case: TrainerCase, windows: Sequence[Sequence[Sequence[Draw]]], before: Sequence[dict],
                    divide_by: Callable[[Draw], torch.Tensor] | None = None) -> list[_Step]:
    """``windows[k][r]``: step k's microbatches on rank r; ``before[k]``: the weights step k started from;
    ``divide_by``: what each masked token's loss is divided by instead of its ``p`` (a pair of terms')."""
    if divide_by is not None:
        windows = [[[Draw(d.batch, d.masked_indices, divide_by(d)) for d in rank] for rank in ranks] for ranks in windows]
    model = replay_model(case)
    eos = model.config.eos_token_id
    steps = []
    for ranks, weights, microbatches in zip(windows, before, replayed_microbatches(windows), strict=True):
        load_weights(model, weights)
        step = _Step(microbatches, [], [])
        for draw in (draw for rank in ranks for draw in rank):
            model.zero_grad(set_to_none=True)
            total, _ = microbatch_sum(model, draw, eos)
            total.backward()
            step.sums.append(total.detach())
            step.grads.append({n: torch.zeros_like(p) if p.grad is None else p.grad.detach().clone()
                               for n, p in model.named_parameters()})
        steps.append(step)
    return steps


def _misses(out, combined: tuple[torch.Tensor, dict], budgets: dict, step: int, skipped: bool,
            gradients: bool = True, slack: dict | None = None) -> float:
    """How far the logged loss (or, with ``gradients``, the worst gradient) of ``step`` lies from ``combined``'s, in
    budgets (each budget scaled up where the alternative's magnitude is the larger: its rounding is too), each
    gradient's budget widened by twice the replay's own error on it (``slack``, :func:`_replay_error`)."""
    loss, grads = combined
    if not gradients:
        comparison = budgets[(step, "loss", None)]
        scale = max(1.0, abs(float(loss)) / max(abs(comparison.golden_value), 1e-300))
        return abs(float(out.loss) - float(loss)) / max(comparison.own_budget * scale, 1e-300)
    worst = 0.0
    if skipped:
        return worst
    magnitude = max((float(g.abs().max()) for g in grads.values() if g.numel()), default=0.0)
    for name, expected in grads.items():
        comparison = budgets[(step, "grad", name)]
        got = out.grads[name]
        got = torch.zeros_like(expected) if got is None else got.to(torch.float64)
        scale = max(1.0, magnitude / max(comparison.magnitude, 1e-300))
        budget = (comparison.own_budget + 2 * (slack or {}).get((step, name), 0.0)) * scale
        if expected.numel():
            worst = max(worst, float((got - expected).abs().max()) / max(budget, 1e-300))
    return worst


def _replay_error(case: TrainerCase, windows, before, steps: Sequence[_Step]) -> dict[tuple[int, str], float]:
    """The replay's own error, per step and tensor: the published objective's gradients combined from each
    microbatch's (as every alternative's are) against one backward of its whole window (as the oracle takes them).
    In a float32 run it lies far inside the budgets; in a float64 run, whose model still normalises in float32
    (the RMSNorm upcast of transformers' Llama-style models), it is float32's rounding, which a float64 budget
    does not hold, and without it a correct float64 run would follow no objective at all."""
    model, right = replay_model(case), published(case)
    eos = model.config.eos_token_id
    errors = {}
    for k, (ranks, weights, microbatches) in enumerate(zip(windows, before, replayed_microbatches(windows), strict=True)):
        load_weights(model, weights)
        model.zero_grad(set_to_none=True)
        draws = [draw for rank in ranks for draw in rank]
        total = sum(right.coefficient(m) * microbatch_sum(model, d, eos)[0] for m, d in zip(microbatches, draws, strict=True))
        if torch.is_tensor(total) and total.requires_grad:
            total.backward()
        _, combined = steps[k].combine(right)
        for name, parameter in model.named_parameters():
            grad = torch.zeros_like(parameter) if parameter.grad is None else parameter.grad
            errors[(k, name)] = float((grad - combined[name]).abs().max()) if grad.numel() else 0.0
    return errors


@dataclass(frozen=True)
class Miss:
    """How far a run lies from an objective, in budgets, at its farthest step, and what says so: the losses where
    they alone reject it (so that which of the two lies farther, a float path's choice, never changes the words)."""

    budgets: float
    what: str  # "losses" or "gradients"

    @property
    def explains(self) -> bool:
        """Within the significance margin (docs/trainer.md, What makes a term significant)."""
        return self.budgets <= SIGNIFICANT

    def words(self) -> str:
        return f"misses the logged {self.what} by {self.budgets:.1e} x their budget"


def _miss(records, steps: Sequence[_Step], objective: Objective, budgets: dict, skipped: Sequence[bool],
          slack: dict) -> Miss:
    """How far the run's logged losses, then its gradients, lie from ``objective`` replayed on ``steps``."""
    first = records[0]
    combined = [step.combine(objective) for step in steps]
    losses = max(_misses(first.steps[k], c, budgets, k, skipped[k], gradients=False) for k, c in enumerate(combined))
    if losses > SIGNIFICANT:
        return Miss(losses, "losses")
    grads = max(_misses(first.steps[k], c, budgets, k, skipped[k], slack=slack) for k, c in enumerate(combined))
    return Miss(grads, "gradients") if grads > SIGNIFICANT else Miss(max(losses, grads), "losses")


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
    failure lies elsewhere: evaluation, or the update). "Follow" is within the significance margin
    (:data:`SIGNIFICANT` budgets), so that no float path can move a run from one sentence to another."""
    first = records[0]
    initial = {n: p.detach() for n, p in tiny_model(case.model_seed, case.weights_dtype).named_parameters()}
    before = [initial, *(s.params for s in first.steps[:-1])]
    windows = [[record.train_draws[k] for record in records] for k in range(len(first.steps))]
    steps = _replayed_steps(case, windows, before)
    budgets = step_budgets(comparisons)
    skipped = [bool(first.skipped and first.skipped[k]) for k in range(len(steps))]
    right = published(case)
    slack = _replay_error(case, windows, before, steps)
    missed = _miss(records, steps, right, budgets, skipped, slack)
    if missed.explains:
        return None
    known = alternatives(case, len(records))
    named = [objective for objective in known if _miss(records, steps, objective, budgets, skipped, slack).explains]
    if named:
        also = "".join(f" (on this run, equally: {o.words})" for o in named[1:])
        return (
            f"this trainer computes {named[0].words}{also}: it matches the logged losses and gradients of every step within "
            f"{SIGNIFICANT:g} x their budgets, where the published objective {missed.words()}; the published objective is "
            f"{right.words} (docs/trainer.md, What one optimizer step must follow)"
        )
    by_terms = _by_terms(case, records, comparisons, windows, before, budgets, skipped, slack)
    if by_terms:
        return by_terms
    worst = next(k for k, step in enumerate(steps)
                 if max(_misses(first.steps[k], step.combine(right), budgets, k, skipped[k], g, slack) for g in (False, True))
                 > SIGNIFICANT)
    return (
        f"matches none of the known alternatives ({', '.join(o.name for o in known)}); "
        f"{_ratios(first.steps[worst], steps[worst].combine(right), worst)}"
    )


#: How far from the logged losses the nearest objective may lie, relative to their size, to be named as nearest
#: (a threshold for naming, not a verdict: the verdict is the budgets').
NEAREST_WITHIN = 0.05
#: How many of the simplest pairs that explain the losses have their gradients replayed.
VERIFIED = 3


def _by_terms(case, records, comparisons, windows, before, budgets, skipped, slack) -> str | None:
    """The diagnosis by terms (docs/trainer.md, Reading a verdict on a research trainer): the normalisation and the
    weights, each named only where the objective without it misses the run by more than the significance margin
    (the margin stated), and the nearest whole objective with its residual; None when nothing lies near."""
    first, eps = records[0], records[0].eps
    loss_size = max(abs(float(step.loss)) for step in first.steps) or 1.0
    pairs = nearest_objectives(case, records, comparisons, eps)
    near = [n for n in pairs if n.residual <= NEAREST_WITHIN * loss_size]
    if not near:
        return None
    misses: dict[int, Miss] = {}

    def miss(candidate: Nearest) -> Miss:
        """The candidate's miss: the losses' alone where they reject it, else a float64 replay's gradients too."""
        if id(candidate) not in misses:
            misses[id(candidate)] = Miss(candidate.badness(), "losses")
            if misses[id(candidate)].explains:
                published_pair = candidate.published_weights and not candidate.normalisation.per_row
                replayed = _replayed_steps(case, windows, before, None if published_pair else
                                           divided_by(candidate.normalisation, candidate.weighting, eps, candidate.delta, TINY_EOS))
                misses[id(candidate)] = _miss(records, replayed, candidate.normalisation, budgets, skipped, slack)
        return misses[id(candidate)]

    # The gradients decide between the simplest few that explain the losses (each a float64 replay of the run).
    followed = next((candidate for candidate in near[:VERIFIED] if miss(candidate).explains), None)
    nearest = followed or near[0]
    weighting, delta = nearest.weighting, nearest.delta
    terms = []
    if nearest.normalisation.name != "published":
        without = _without(pairs, nearest, normalisation=True)
        terms.append(f"the normalisation: {nearest.normalisation.words} (without it, the nearest objective "
                     f"{miss(without).words()})")
    if not nearest.published_weights:
        where = f", {weighting.where}" if weighting.where else ""
        fitted = f"delta fitted to the logged losses: {delta:.1e}; " if weighting.fitted else ""
        without = _without(pairs, nearest, normalisation=False)
        terms.append(f"the weights: {weighting.words(delta)} instead of 1/p{where} ({fitted}without it, the nearest "
                     f"objective {miss(without).words()})")
    if not terms:
        return None
    said = "; ".join(terms)
    name = f"{nearest.normalisation.name}; weights {'1/p' if nearest.published_weights else weighting.words(delta)}"
    residual = f"residual after {'both' if len(terms) > 1 else 'it'} {nearest.residual:.1e} of the loss budget {nearest.budget:.1e}"
    if followed is not None:
        return (f"this trainer departs from the published objective in {len(terms)} term{'s' * (len(terms) > 1)}: {said}. "
                f"Nearest: {name} ({residual}); it matches the logged losses and gradients of every step within "
                f"{SIGNIFICANT:g} x their budgets. The published objective is {published(case).words}, weights 1/p "
                "(docs/trainer.md, Reading a verdict on a research trainer)")
    return (f"nearest: {name} ({residual}), but the gradients depart from it too: {said}, and a term the harness does "
            "not know departs as well (docs/trainer.md, Reading a verdict on a research trainer)")


def _without(pairs: Sequence[Nearest], nearest: Nearest, normalisation: bool) -> Nearest:
    """The pair ``nearest`` would be without one of its terms: the published normalisation under its weighting (its
    own fitted delta), or its normalisation under the published weights."""
    if normalisation:
        return next(p for p in pairs if p.normalisation.name == "published" and p.weighting is nearest.weighting
                    and p.published_weights == nearest.published_weights)
    return next(p for p in pairs if p.normalisation is nearest.normalisation and p.published_weights)
