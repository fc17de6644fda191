"""A verdict that does not depend on the float path it ran on (docs/trainer.md, What invariance the suite proves).

Two machines never produce the same float32 run: the CPU's kernels (AVX2 against AVX-512), the intra-op thread
count and CUDA (cuBLAS, TF32, atomics) each change the rounding of every logged loss, gradient and parameter.
The budgets absorb that for the comparisons; what must not move with it is the verdict's words: its kinds, the
terms the diagnosis names and the nearest objective. Two tools hold a verdict to that:

* :func:`perturbed`: a run's observations moved by a seeded relative perturbation of a fraction of each one's own
  budget, the CPU's stand-in for another float path (a quarter of the budget by default: a correct run's own
  rounding is what the budget is derived from, so another path's lies within that order);
* :func:`verdict_words`: what must be identical under any path, the figures left out (residuals, fitted deltas,
  margins and ratios may move; a term may not appear or vanish).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

import torch

from oracle.window_reference import StepResult
from parity.budget import Comparison
from parity.compare import Verdict
from parity.training.diffusion.drivers.trainer_run import TrainerRecord

#: The fraction of its budget each observation is moved by, at most (docs/trainer.md, What invariance the suite proves).
PERTURBATION = 0.25

#: A figure of a diagnosis: a decimal or a power of ten (counts such as "1 term" or "step 0" are words).
_FIGURE = re.compile(r"[-+]?\d+\.\d+(?:e[-+]?\d+)?|[-+]?\d+e[-+]?\d+")


def verdict_words(verdict: Verdict) -> tuple[tuple[str, ...], str]:
    """The verdict's kinds and its diagnosis with every figure replaced by ``#``."""
    return tuple(verdict.failure_kinds), _FIGURE.sub("#", verdict.diagnosis or "")


def perturbed(records: Sequence[TrainerRecord], comparisons: Sequence[Comparison], seed: int,
              fraction: float = PERTURBATION) -> list[TrainerRecord]:
    """``records`` with every step's logged loss, gradients and parameters, and the evaluation losses, each moved
    elementwise by ``u * fraction * budget * x / max|x|`` (``u`` uniform in [-1, 1], seeded): relative, as a
    rounding is, so an exact zero stays zero and no element moves by more than ``fraction`` of its tensor's
    budget. The budget is the one a correct run gets at that step (``Comparison.own_budget``): another float path
    moves a tensor by its rounding, never by how far a wrong run has already drifted from the oracle. An
    observation without a comparison (a skipped step's gradients, which nothing reads) is kept."""
    budgets = {(c.rank, c.step, c.quantity, c.tensor): c.own_budget for c in comparisons}
    by_name = {c.name: c.own_budget for c in comparisons}
    generator = torch.Generator().manual_seed(seed)

    def move(x: torch.Tensor | None, budget: float | None) -> torch.Tensor | None:
        if x is None or budget is None or not x.numel():
            return x
        size = float(x.detach().abs().max())
        if size == 0.0 or not torch.isfinite(x).all():
            return x
        u = torch.rand(x.shape, generator=generator, dtype=torch.float64) * 2 - 1
        return (x.detach().to(torch.float64) * (1 + u * fraction * budget / size)).to(x.dtype)

    ranked = len(records) > 1
    moved = []
    for rank, record in enumerate(records):
        on = rank if ranked else None
        prefix = f"rank {rank} " if ranked else ""
        steps = [StepResult(move(s.loss, budgets.get((on, k, "loss", None))),
                            {n: move(g, budgets.get((on, k, "grad", n))) for n, g in s.grads.items()},
                            {n: move(p, budgets.get((on, k, "param", n))) for n, p in s.params.items()})
                 for k, s in enumerate(record.steps)]
        eval_loss = record.eval_loss
        if eval_loss is not None and f"{prefix}eval loss" in by_name:
            eval_loss = float(move(torch.tensor(eval_loss, dtype=torch.float64), by_name[f"{prefix}eval loss"]))
        batch_losses = [move(loss, by_name.get(f"{prefix}prediction_step batch {b} loss"))
                        for b, loss in enumerate(record.batch_losses)]
        moved.append(replace(record, steps=steps, eval_loss=eval_loss, batch_losses=batch_losses))
    return moved
