"""The terms of an objective a trainer may compute (docs/trainer.md, Naming the objective; Reading a verdict on a
research trainer): the normalisations (a coefficient per microbatch, and per row for LLaDA-style objectives) and
the weightings (what each masked token's loss is divided by), and the nearest pair of them to a run's logged
losses, a weighting's delta fitted on the way. :mod:`parity.training.diffusion.objectives` names what a run computes from them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from oracle.nemotron_diffusion import IGNORE_INDEX, TINY_CONFIG, eos_padding_rule
from oracle.window_reference import Draw, microbatch_sum
from parity.budget import Comparison
from parity.cases import TrainerCase
from parity.training.diffusion.drivers.window_cases import tiny_model
from parity.training.step_compare import SIGNIFICANT, step_budgets

#: The tiny model's EOS id, which the EOS rule pads with.
TINY_EOS = TINY_CONFIG["eos_token_id"]


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
    #: whether each row is also divided by its own answer length and the microbatch's rows (:data:`ROW_OBJECTIVES`)
    per_row: bool = False


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


def replay_model(case: TrainerCase):
    """The run's tiny model in float64 on the CPU, to replay its steps on (:func:`load_weights` before each)."""
    return tiny_model(case.model_seed, case.weights_dtype).to("cpu", torch.float64)


def load_weights(model, weights: dict) -> None:
    """``model`` at the trainer's ``weights`` (a step's starting point), in float64."""
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            parameter.copy_(weights[name].to(torch.float64))


# --- the terms: what each masked token's loss is divided by ------------------------------------------------


@dataclass(frozen=True)
class Weighting:
    """A token's weight as ``1 / divide_by(p)``: the published ``1/p``, or a fitted or schedule departure from it."""

    #: with ``delta`` standing for the fitted value
    name: str
    #: (p, eps, delta) -> what the token's loss is divided by
    divide_by: Callable[[torch.Tensor, float, float], torch.Tensor]
    fitted: bool = False
    #: what the name's symbols are, said once in the verdict
    where: str = ""

    def words(self, delta: float) -> str:
        return self.name.replace("delta", f"{delta:.1e}")


WEIGHTINGS = (
    Weighting("1/(p + delta)", lambda p, eps, delta: p + delta, fitted=True),
    Weighting("1/(t + delta)", lambda p, eps, delta: (p - eps) / (1 - eps) + delta, fitted=True,
              where="t = (p - eps)/(1 - eps), the sampled time, as a scheduler's denominator"),
    Weighting("uniform", lambda p, eps, delta: torch.ones_like(p), where="no 1/p"),
)
#: Where a fitted delta is searched: none (the published weights, for ``1/(p + delta)``), and from 1e-10 to 0.1 on a
#: log scale (four a decade).
DELTAS = (0.0, *(10.0 ** (e / 4) for e in range(-40, -3)))


@dataclass(frozen=True)
class Row:
    """What a row's divisor may depend on, and the row's summed masked cross-entropy and its ``p``."""

    ce: float
    p: float
    supervised: int  # the row's labels != -100: its answer
    rows: int  # of its microbatch


#: Objectives that also divide each row by its own count (LLaDA's SFT objective: the answer length).
ROW_OBJECTIVES = (
    ("answer length per row, averaged", "mean over the rows of S_row / A_row, A_row the row's answer (supervised) tokens, "
     "averaged over the window's microbatches", lambda m: 1 / (m.world * m.window)),
    ("answer length per row, summed", "mean over the rows of S_row / A_row, A_row the row's answer (supervised) tokens, "
     "summed over the window's microbatches", lambda m: 1 / m.world),
)


def _row_divisor(objective: Objective, row: Row) -> float:
    return row.rows * max(row.supervised, 1) if objective.per_row else 1.0


def row_objectives() -> list[Objective]:
    return [Objective(name, words, coefficient, per_row=True) for name, words, coefficient in ROW_OBJECTIVES]


def _row_sums(case: TrainerCase, windows, before) -> list[list[list[Row]]]:
    """Per step, per microbatch (rank by rank), per row: its summed masked cross-entropy and its p, in float64
    on the trainer's weights before the step. The model divides by p_mask; an infinite p_mask leaves a row
    out, so one forward per row gives its sum."""
    model = replay_model(case)
    eos = model.config.eos_token_id
    steps = []
    for ranks, weights in zip(windows, before, strict=True):
        load_weights(model, weights)
        with torch.no_grad():
            step = []
            for rank in ranks:
                for draw in rank:
                    answers = _answers(draw, eos)
                    count = draw.masked_indices.shape[0]
                    rows = []
                    for row in range(count):
                        alone = torch.full_like(draw.p_mask, float("inf"), dtype=torch.float64)
                        alone[row] = 1.0
                        total, _ = microbatch_sum(model, Draw(draw.batch, draw.masked_indices, alone), eos)
                        rows.append(Row(float(total), float(draw.p_mask[row].reshape(-1)[0]), int(answers[row]), count))
                    step.append(rows)
            steps.append(step)
    return steps


def _predicted(rows, coefficients, normalisation: Objective, weighting: Weighting, eps: float, delta: float) -> float:
    """One step's loss under a normalisation (a coefficient per microbatch, a divisor per row) and a weighting."""
    total = 0.0
    for coefficient, microbatch in zip(coefficients, rows, strict=True):
        for row in microbatch:
            divided = float(weighting.divide_by(torch.tensor(row.p, dtype=torch.float64), eps, delta))
            total += coefficient * row.ce / (divided * _row_divisor(normalisation, row))
    return total


def _answers(draw: Draw, eos: int | None) -> torch.Tensor:
    """Each row's supervised tokens under the EOS rule (its answer, and its EOS padding when it has one)."""
    _, targets, _, _ = eos_padding_rule(draw.batch["input_ids"], draw.batch.get("attention_mask"), draw.batch.get("labels"), eos)
    return (targets != IGNORE_INDEX).sum(dim=1)


def divided_by(normalisation: Objective, weighting: Weighting, eps: float, delta: float, eos: int | None):
    """What the replay divides each masked token's loss by under this pair (per row, with the row's divisor)."""

    def divide(draw: Draw) -> torch.Tensor:
        divided = weighting.divide_by(draw.p_mask.to(torch.float64), eps, delta)
        if not normalisation.per_row:
            return divided
        rows = draw.p_mask.shape[0]
        return divided * (rows * _answers(draw, eos).clamp(min=1).to(torch.float64))[:, None]

    return divide




@dataclass(frozen=True)
class Nearest:
    """The nearest whole objective: a normalisation and a weighting (its delta), how far the logged losses lie from it."""

    normalisation: Objective
    weighting: Weighting
    delta: float
    residual: float  # the |logged - predicted| of the step where it is largest against the budget
    budget: float  # the loss budget at that step

    def badness(self) -> float:
        """How far it lies from the logged losses, in loss budgets."""
        return self.residual / max(self.budget, 1e-300)

    @property
    def departing_terms(self) -> int:
        return (self.normalisation.name != "published") + (not self.published_weights)

    @property
    def published_weights(self) -> bool:
        return self.weighting is WEIGHTINGS[0] and self.delta == 0.0


#: A grid step of :data:`DELTAS`, as a factor; the golden section searches one on either side of the best grid point.
GRID_STEP = 10.0 ** 0.25
GOLDEN = (5**0.5 - 1) / 2


def _refined(fit: Callable[[float], Nearest], delta: float, iterations: int = 40) -> Nearest:
    """The delta nearest the logged losses between ``delta``'s grid neighbours (the residual is unimodal there for
    the weightings' smooth families), on a log scale; the grid point itself where nothing there is nearer."""
    import math

    low, high = math.log(delta / GRID_STEP), math.log(delta * GRID_STEP)
    best = fit(delta)
    a, b = high - GOLDEN * (high - low), low + GOLDEN * (high - low)
    fa, fb = fit(math.exp(a)), fit(math.exp(b))
    for _ in range(iterations):
        if fa.badness() < fb.badness():
            high, b, fb = b, a, fa
            a = high - GOLDEN * (high - low)
            fa = fit(math.exp(a))
        else:
            low, a, fa = a, b, fb
            b = low + GOLDEN * (high - low)
            fb = fit(math.exp(b))
    return min((best, fa, fb), key=Nearest.badness)


def nearest_objectives(case: TrainerCase, records: Sequence, comparisons: Sequence[Comparison], eps: float) -> list[Nearest]:
    """Every normalisation (the published one, the known alternatives, the per-row ones) under the published weights
    and under every weighting, a delta fitted to the logged losses where the weighting has one: the pairs, the
    simplest explanation first. Those that explain the losses (within :data:`SIGNIFICANT` budgets) come first, and
    among them the fewest departing terms, then the order declared here, never the residual: inside the margin a
    float path decides the residual, so ranking by it would let the machine choose the words (a fitted delta
    always fits a hair closer than the pair without it). Outside the margin, the nearest first. Empty without steps."""
    first = records[0]
    if not first.steps:
        return []
    initial = {n: p.detach() for n, p in tiny_model(case.model_seed, case.weights_dtype).named_parameters()}
    before = [initial, *(s.params for s in first.steps[:-1])]
    windows = [[record.train_draws[k] for record in records] for k in range(len(first.steps))]
    rows = _row_sums(case, windows, before)
    microbatches = replayed_microbatches(windows)
    budgets = step_budgets(comparisons)
    logged = [float(step.loss) for step in first.steps]
    found = []
    for normalisation in [published(case), *alternatives(case, len(records)), *row_objectives()]:
        coefficients = [[normalisation.coefficient(m) for m in step] for step in microbatches]

        def fit(weighting: Weighting, delta: float, normalisation=normalisation, coefficients=coefficients) -> Nearest:
            errors = [(abs(logged[k] - _predicted(rows[k], coefficients[k], normalisation, weighting, eps, delta)),
                       budgets[(k, "loss", None)].own_budget) for k in range(len(logged))]
            residual, budget = max(errors, key=lambda e: e[0] / max(e[1], 1e-300))
            return Nearest(normalisation, weighting, delta, residual, budget)

        found.append(fit(WEIGHTINGS[0], 0.0))  # the published weights, a pair of its own whatever a delta fits
        for weighting in WEIGHTINGS:
            candidates = [fit(weighting, delta) for delta in (DELTAS[1:] if weighting.fitted else (0.0,))]
            nearest = min(candidates, key=Nearest.badness)
            if weighting.fitted:  # between the grid's neighbours, by golden section on log delta
                nearest = _refined(lambda delta, w=weighting: fit(w, delta), nearest.delta)
            found.append(nearest)
    return sorted(found, key=lambda n: (n.badness() > SIGNIFICANT, n.departing_terms,
                                        n.badness() if n.badness() > SIGNIFICANT else 0.0))


def replayed_microbatches(windows) -> list[list[Microbatch]]:
    """Per step, what each microbatch's coefficient may depend on, rank by rank."""
    steps = []
    for ranks in windows:
        all_masked = sum(int(d.masked_indices.sum()) for rank in ranks for d in rank)
        step = []
        for rank in ranks:
            rank_masked = sum(int(d.masked_indices.sum()) for d in rank)
            for draw in rank:
                labels, ids = draw.batch.get("labels"), draw.batch["input_ids"]
                supervised = int((labels != IGNORE_INDEX).sum()) if labels is not None else ids.numel()
                step.append(Microbatch(int(draw.masked_indices.sum()), supervised, ids.numel(), ids.shape[0], len(rank),
                                       rank_masked, all_masked, len(ranks)))
        steps.append(step)
    return steps
