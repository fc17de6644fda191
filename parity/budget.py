"""The budget rule (docs/budget.md): the oracle's own error, in the working dtype, sets the tolerance.

For every tensor: ``golden`` is the oracle in float64 on the CPU, ``ref`` the oracle in the working
dtype on the working device, ``out`` the target likewise. The target may be at most twice as wrong
as the reference, plus a floor of a few units of rounding of the golden's magnitude:

    max|out - golden| <= 2 * max|ref - golden| + 4 * eps(dtype) * max|golden|

``ref`` may be several equally valid evaluations of the oracle (the same sums in another order);
the reference error is the worst of them. In float64 this is what keeps the rule meaningful: there
the golden *is* the in-order reference, and only a reordered one shows the rounding a float64
computation of this size carries. The in-order evaluation runs along the target's own trajectory
(:func:`along_trajectory`): the rule bounds one step's arithmetic, and the rounding a correct
target's earlier steps left in its parameters is then in the reference too.

The floor's magnitude is that of the tensor's *group* (all gradients of a step, all parameters of
a step), not of the tensor alone: rounding in backpropagation scales with the quantities flowing
through the network, so a gradient that is pure cancellation (~1e-16 in float64, true value zero)
carries the rounding of its neighbours, not a rounding of its own vanishing size. The 2x reference
term stays per tensor.

A difference that breaks the budget is *named* (``Comparison.kind``): ``normalisation`` (off by far
more than any rounding, the way a wrong denominator is), ``precision`` (a float64 run whose error
fits the float32 budget: lower-precision arithmetic inside the target; a note on a passing verdict
unless precision is strict), ``mismatch`` (beyond the budget but too small to be a wrong
denominator). What a run's comparisons add up to, with the findings that are not tensor comparisons,
is the verdict's job (parity/compare.py); see docs/budget.md for the margins behind the numbers.

The floor is a rounding of the *working precision* (``precision``), or of the target's own dtype
when that is coarser: under ``TrainingArguments(bf16=True)`` the master weights and gradients are
float32 tensors, but the arithmetic that made them is bfloat16. In a bfloat16 or float16 run, where the margins
between rounding and a wrong count are narrow, a case whose wrong-count effect (predicted by the
float64 oracle) stays near the budget cannot tell a bug from rounding: its verdict says it is *not
informative* at that precision (:func:`informativeness`) instead of passing blindly.

A tolerance derived this way follows the dtype, the device and the size of the problem; a magic
number would not.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np
import torch

REFERENCE_FACTOR = 2.0
#: Values of each tensor a comparison keeps for the report's scatter plot.
SAMPLED = 256
FLOOR_ULPS = 4.0
#: Relative error (to the tensor group's magnitude) above which a difference is a wrong quantity,
#: not rounding: float32 rounding of these tiny models stays below 1e-5 relative (docs/budget.md).
NORMALISATION_RELATIVE = 1e-4
#: ... and, in a coarser precision, this many units of its rounding (bfloat16: 8 eps = 6 %, twice the floor).
NORMALISATION_ULPS = 8.0
#: A bfloat16 or float16 case is informative when the float64 oracle predicts the wrong count moves some
#: tensor by at least this many budgets: correct code uses at most about half of one (docs/budget.md).
INFORMATIVE_MARGIN = 2.0


@dataclass(frozen=True)
class Comparison:
    """One tensor held to its budget, with what a failure message needs."""

    name: str
    error: float
    reference_error: float
    budget: float
    worst_index: tuple[int, ...]
    out_value: float
    golden_value: float
    #: Structured identity, for code that builds on comparisons (None where not applicable).
    step: int | None = None
    quantity: str | None = None  # "loss", "grad", "param", "eval loss", "batch loss", ...
    tensor: str | None = None  # the parameter's name for grads and params
    rank: int | None = None
    #: The magnitude the floor is taken from (the tensor's group, or the tensor's own if larger).
    magnitude: float = 0.0
    #: In a float64 run: the budget the same tensor would have in ``lower_dtype`` (from the oracle
    #: run in that dtype); what tells lower-precision arithmetic from a wrong quantity.
    lower_dtype: str | None = None
    lower_budget: float | None = None
    #: The precision whose rounding the floor allows (the working dtype, or the target's own if coarser).
    precision: str | None = None
    #: The reference error of the references on the oracle's own trajectory alone, where ``reference_error``
    #: also takes the one along the target's (perhaps diverging) trajectory; None when every reference
    #: follows the oracle's. Its budget, :attr:`own_budget`, is what the report plots against.
    own_reference_error: float | None = None
    #: The least-squares factor of out on golden over the whole tensor (``<out, golden> / <golden, golden>``),
    #: None for an all-zero golden: a wrong count scales a tensor, and this names by how much.
    slope: float | None = None
    #: Up to ``SAMPLED`` (golden, out) pairs of the tensor, evenly strided: the report's scatter of out on golden.
    sample: tuple[tuple[float, float], ...] = field(default=(), repr=False, compare=False)

    @property
    def holds(self) -> bool:
        return self.error <= self.budget

    @property
    def own_budget(self) -> float:
        """The budget a correct target gets at this step: the rule applied to the references on the
        oracle's own trajectory only, so a diverging bug's inflated budget never makes it look healed."""
        if self.own_reference_error is None:
            return self.budget
        return self.budget - REFERENCE_FACTOR * (self.reference_error - self.own_reference_error)

    @property
    def relative_error(self) -> float:
        scale = max(self.magnitude, abs(self.golden_value))
        return self.error / scale if scale > 0 else (0.0 if self.error == 0 else float("inf"))

    @property
    def kind(self) -> str | None:
        """None when it holds; else what kind of difference this is (see the module docstring)."""
        if self.holds:
            return None
        if not math.isfinite(self.error):
            return "mismatch"
        if self.lower_budget is not None and self.error <= self.lower_budget:
            return "precision"
        if self.relative_error >= normalisation_relative(self.precision):
            return "normalisation"
        return "mismatch"

    @property
    def ratio(self) -> float:
        """Error over budget: below 1 holds. What ``hypothesis.target`` maximises in the nightly run."""
        return self.error / self.budget if self.budget > 0 else (0.0 if self.error == 0 else float("inf"))

    def describe(self) -> str:
        if not math.isfinite(self.reference_error):
            return (
                f"{self.name}: the oracle itself is not finite in the working dtype (at index "
                f"{list(self.worst_index)}), so no budget exists: the case diverges, not the target"
            )
        verdict = "within" if self.holds else "exceeds"
        prefix = "" if self.holds else f"[{self.kind}] "
        lower = ""
        if not self.holds and self.lower_budget is not None:
            verb = "within" if self.error <= self.lower_budget else "exceeds"
            lower = f"; {verb} the {self.lower_dtype} budget {self.lower_budget:.3e}"
        return (
            f"{prefix}{self.name}: max|out - golden| = {self.error:.3e} at index {list(self.worst_index)} "
            f"(out {self.out_value:.9g}, golden {self.golden_value:.9g}) {verdict} the budget {self.budget:.3e} "
            f"= {REFERENCE_FACTOR:g} x reference error {self.reference_error:.3e} + floor{lower}"
        )


def normalisation_relative(precision: str | None) -> float:
    """The relative error from which a difference is a wrong quantity, not rounding, in ``precision``."""
    eps = torch.finfo(getattr(torch, precision)).eps if precision else 0.0
    return max(NORMALISATION_RELATIVE, NORMALISATION_ULPS * eps)


def floor_dtype(out: torch.dtype, precision: torch.dtype | None) -> torch.dtype:
    """The coarser of the target's dtype and the working precision: the rounding the floor allows."""
    if precision is None or torch.finfo(out).eps >= torch.finfo(precision).eps:
        return out
    return precision


def _error(tensor: torch.Tensor, golden64: torch.Tensor) -> torch.Tensor:
    return (tensor.detach().to("cpu", torch.float64) - golden64).abs()


def compare_tensor(
    name: str,
    out: torch.Tensor,
    refs: Sequence[torch.Tensor],
    golden: torch.Tensor,
    scale: float = 0.0,
    *,
    lower_refs: Sequence[torch.Tensor] = (),
    precision: torch.dtype | None = None,
    lower_precision: torch.dtype | None = None,
    own_refs: int | None = None,
    **identity,
) -> Comparison:
    """``scale``: the magnitude of the tensor's group, for the floor (the tensor's own when larger).

    ``precision``: the working dtype, when the target's tensors are finer than its arithmetic
    (autocast over float32 weights); the floor is a rounding of the coarser of the two.
    ``lower_precision`` likewise for ``lower_refs`` (a loss the lower oracle upcasts).

    ``lower_refs``: the oracle in a lower dtype (float32 beside a float64 run), for the budget that
    names a precision finding. ``own_refs``: how many of ``refs``, first, follow the oracle's own
    trajectory (the rest start from the target's parameters): their error is ``own_reference_error``.
    ``identity``: ``step``, ``quantity``, ``tensor``, ``rank``.
    """
    if any(t.shape != golden.shape for t in (out, *refs, *lower_refs)):
        raise AssertionError(
            f"{name}: shapes differ: out {tuple(out.shape)}, refs {[tuple(r.shape) for r in refs]}, "
            f"golden {tuple(golden.shape)}"
        )
    golden64 = golden.detach().to("cpu", torch.float64)
    out_error = _error(out, golden64)
    ref_error = torch.stack([_error(ref, golden64) for ref in refs]).amax(dim=0)
    if not torch.isfinite(out_error).all():
        out_error = torch.where(torch.isfinite(out_error), out_error, torch.inf)
    magnitude = max(scale, golden64.abs().max().item() if golden64.numel() else 0.0)
    rounding = floor_dtype(out.dtype, precision)
    floor = FLOOR_ULPS * torch.finfo(rounding).eps * magnitude
    ref_max = ref_error.max().item() if ref_error.numel() else 0.0
    lower_dtype = lower_budget = None
    if lower_refs:
        lower = floor_dtype(lower_refs[0].dtype, lower_precision)
        lower_max = max((_error(r, golden64).max().item() if r.numel() else 0.0) for r in lower_refs)
        lower_dtype = str(lower).removeprefix("torch.")
        lower_budget = REFERENCE_FACTOR * lower_max + FLOOR_ULPS * torch.finfo(lower).eps * magnitude
    own = None
    if own_refs is not None and own_refs < len(refs) and ref_error.numel():
        own = max(_error(r, golden64).max().item() for r in refs[:own_refs])
    extra = dict(
        own_reference_error=own,
        magnitude=magnitude,
        lower_dtype=lower_dtype,
        lower_budget=lower_budget,
        precision=str(rounding).removeprefix("torch."),
        **identity,
    )
    if out_error.numel() == 0:
        return Comparison(name, 0.0, ref_max, floor, (), 0.0, 0.0, **extra)
    stride = max(1, -(-golden64.numel() // SAMPLED))
    extra["sample"] = tuple(zip(golden64.reshape(-1)[::stride].tolist(), out.detach().reshape(-1)[::stride].tolist(),
                                strict=True))
    energy = float((golden64 * golden64).sum())
    if energy > 0 and torch.isfinite(out_error).all():
        extra["slope"] = float((out.detach().to("cpu", torch.float64) * golden64).sum()) / energy
    flat = int(out_error.argmax())
    worst = tuple(int(i) for i in np.unravel_index(flat, out_error.shape)) if out_error.dim() else ()
    return Comparison(
        name=name,
        error=out_error.max().item(),
        reference_error=ref_max,
        budget=REFERENCE_FACTOR * ref_max + floor,
        worst_index=worst,
        out_value=out.detach().reshape(-1)[flat].item(),
        golden_value=golden64.reshape(-1)[flat].item(),
        **extra,
    )


def compare_states(
    out: Mapping[str, torch.Tensor | None],
    refs: Sequence[Mapping[str, torch.Tensor | None]],
    golden: Mapping[str, torch.Tensor | None],
    *,
    lower_refs: Sequence[Mapping[str, torch.Tensor | None]] = (),
    names: Mapping[str, str] | None = None,
    precision: torch.dtype | None = None,
    lower_precision: torch.dtype | None = None,
    own_refs: int | None = None,
    **identity,
) -> list[Comparison]:
    """Compare one group of same-keyed tensors; a key missing in one result only is a failure.

    A tensor that is None in some results only (a gradient that never flowed: a fused head applied
    to no masked position) is compared as zeros: under the harness's plain SGD a step with no
    gradient and one with a zero gradient leave the parameter alike (docs/trainer.md, What one
    optimizer step must follow), and a gradient that should have flowed still fails on its values.
    ``names`` maps a key to the comparison's display name (default: the key); the key itself is
    the comparison's ``tensor`` field.
    """
    for result in (out, *refs, *lower_refs):
        if set(result) != set(golden):
            raise AssertionError(f"tensor names differ from the golden's: {sorted(set(result) ^ set(golden))}")
    scale = max((t.detach().abs().max().item() for t in golden.values() if t is not None and t.numel()), default=0.0)
    comparisons = []
    for key in golden:
        name = key if names is None else names[key]
        results = (golden, out, *refs, *lower_refs)
        present = next((result[key] for result in results if result[key] is not None), None)
        if present is not None:
            out_tensor = _zeros_if_none(out[key], present, refs[0][key] if refs else None)
            comparisons.append(
                compare_tensor(
                    name,
                    out_tensor,
                    [_zeros_if_none(ref[key], present, out_tensor) for ref in refs],
                    _zeros_if_none(golden[key], present, None, torch.float64),
                    scale,
                    lower_refs=[_zeros_if_none(ref[key], present, None) for ref in lower_refs],
                    precision=precision,
                    lower_precision=lower_precision,
                    own_refs=own_refs,
                    **{"tensor": key, **identity},
                )
            )
    return comparisons


def _zeros_if_none(
    tensor: torch.Tensor | None, like: torch.Tensor, sibling: torch.Tensor | None, dtype: torch.dtype | None = None
) -> torch.Tensor:
    """``tensor``, or zeros of ``like``'s shape in ``dtype`` (else the sibling result's, else ``like``'s)."""
    if tensor is not None:
        return tensor
    dtype = dtype or (sibling.dtype if sibling is not None else like.dtype)
    return torch.zeros(like.shape, dtype=dtype, device=like.device)


# --- the references along a trajectory --------------------------------------------------------------

Window = TypeVar("Window")
Step = TypeVar("Step")
Parameters = Mapping[str, torch.Tensor]


def along_trajectory(
    model: torch.nn.Module,
    windows: Sequence[Window],
    step: Callable[[torch.nn.Module, int, Window], Step],
    starts: Sequence[Parameters | None],
) -> list[Step]:
    """The oracle's steps over ``windows`` (``step(model, k, window)`` each, in ``model``'s dtype and
    on its device), step k from the parameters ``starts[k]`` where given, else from where ``model`` is.

    ``starts = before_each(target_steps)`` is the in-order reference along the target's own
    trajectory (docs/budget.md, The reference error, 1), which every run is held to, window runs and
    whole training runs alike; ``before_each(golden_steps)`` gives the local-mean prediction its
    golden starts. A correct target's parameters drift from the oracle's own, step by
    step, by rounding that may grow chaotically over many steps; evaluated where the target is, the
    reference carries that drift, and the step's own arithmetic is what the budget judges. Step 0
    has no start of its own: it begins from the seeded weights the target begins from, so a target
    wrong from its first step is judged against the oracle's own step there, where it first shows.
    """
    steps = []
    for k, window in enumerate(windows):
        if starts[k] is not None:
            with torch.no_grad():
                for name, parameter in model.named_parameters():
                    parameter.copy_(starts[k][name])
        steps.append(step(model, k, window))
    return steps


def before_each(steps: Sequence) -> list[Parameters | None]:
    """The parameters each of a run's ``steps`` (``StepResult``s) started from: those after the step
    before; None for step 0, which starts from the seeded weights."""
    return [None, *(step.params for step in steps[:-1])]


def judges_informativeness(precision: torch.dtype) -> bool:
    """Whether runs in ``precision`` are checked for informativeness: anything coarser than float32
    (bfloat16, float16), where the margin between rounding and a wrong count is narrow (in float32 it
    is over five orders of magnitude)."""
    return torch.finfo(precision).eps > torch.finfo(torch.float32).eps


#: The Hypothesis event of a drawn case whose pass says nothing (``--hypothesis-show-statistics``).
NOT_INFORMATIVE_EVENT = "a case not informative at its precision (held, says nothing of a wrong count)"


def informativeness(predicted: Iterable[Comparison], precision: str) -> str | None:
    """None when the case can show a wrong count at ``precision``; otherwise why it cannot.

    ``predicted``: the float64 oracle under the local-mean normalisation, held to the run's budgets
    as if it were the target (the bug's predicted effect, free of any rounding of the working
    dtype). Unless some tensor moves by ``INFORMATIVE_MARGIN`` budgets, a wrong count would hide in
    rounding, so a pass says nothing about it (docs/budget.md, bfloat16).
    """
    worst = max((c for c in predicted), key=lambda c: c.ratio, default=None)
    ratio = 0.0 if worst is None else worst.ratio
    if ratio >= INFORMATIVE_MARGIN:
        return None
    where = "" if worst is None else f", at {worst.name}"
    return (
        f"not informative at {precision}: the float64 oracle predicts a per-microbatch (local-mean) "
        f"normalisation would move no tensor beyond {INFORMATIVE_MARGIN:g}x its budget (at most {ratio:.2g}x{where}), "
        "so this case cannot tell a wrong count from rounding"
    )
