"""The per-step comparison, written once for window runs and whole training runs (docs/budget.md).

After every optimizer step: the loss, every gradient and every parameter, each held to its own
budget against the golden, with the working-dtype references (and the oracle one dtype lower,
whose budget names a precision finding).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from oracle.window_reference import StepResult
from parity.budget import Comparison, compare_states, compare_tensor


def compare_steps(
    out: Sequence[StepResult],
    refs: Sequence[Sequence[StepResult]],
    golden: Sequence[StepResult],
    precision: torch.dtype | None = None,
    *,
    lower: Sequence[Sequence[StepResult]] = (),
    lower_precision: torch.dtype | None = None,
    rank: int | None = None,
    skipped: Sequence[bool] = (),
    own_refs: int | None = None,
) -> list[Comparison]:
    """``out`` step by step against ``golden``, each floor a rounding of ``precision`` when given (see
    ``parity.budget.compare_tensor``; ``lower_precision`` likewise for ``lower``); ``rank`` names the
    rank in a run over several.

    A step the loss scaler ``skipped`` (``fp16=True``: its scaled gradients overflowed, so they are
    not finite by definition) is held on its loss and its parameters, which must not have moved
    (the references skip it too); its gradients are not compared. ``own_refs``: how many of ``refs``,
    first, follow the oracle's own trajectory (``parity.budget.Comparison.own_budget``)."""
    if any(len(steps) != len(golden) for steps in (out, *refs, *lower)):
        raise AssertionError(f"step counts differ: out {len(out)}, golden {len(golden)}")
    prefix = "" if rank is None else f"rank {rank} "
    comparisons = []
    for step, g in enumerate(golden):
        o, rs, ls = out[step], [ref[step] for ref in refs], [ref[step] for ref in lower]
        name = f"{prefix}step {step} loss"
        comparisons.append(
            compare_tensor(
                name, o.loss, [r.loss for r in rs], g.loss, lower_refs=[r.loss for r in ls], precision=precision,
                lower_precision=lower_precision, own_refs=own_refs, step=step, quantity="loss", rank=rank,
            )
        )
        judged = (("params", "param"),) if step < len(skipped) and skipped[step] else (("grads", "grad"), ("params", "param"))
        for kind, quantity in judged:
            state = getattr(g, kind)
            comparisons.extend(
                compare_states(
                    getattr(o, kind),
                    [getattr(r, kind) for r in rs],
                    state,
                    lower_refs=[getattr(r, kind) for r in ls],
                    names={name: f"{prefix}step {step} {quantity} {name}" for name in state},
                    precision=precision,
                    lower_precision=lower_precision,
                    own_refs=own_refs,
                    step=step,
                    quantity=quantity,
                    rank=rank,
                )
            )
    return comparisons


#: How far, in budgets, the run may lie from an objective that still explains it (docs/trainer.md, What makes a term
#: significant). A correct formula sits within one budget on the machine the budget was derived on and may exceed it
#: on another float path (AVX2 against AVX-512, one thread against two, CUDA); a wrong term sits orders of magnitude
#: away. So a departing term is named only when the objective without it misses the run by more than this.
SIGNIFICANT = 4.0


def step_budgets(comparisons: Sequence[Comparison]) -> dict[tuple[int, str, str | None], Comparison]:
    """Rank 0's (or the single rank's) step comparisons, by (step, quantity, tensor)."""
    return {(c.step, c.quantity, c.tensor): c for c in comparisons if c.step is not None and c.rank in (None, 0)
            and c.quantity in ("loss", "grad")}
