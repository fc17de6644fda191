"""The verdict (docs/design.md, Verdict kinds): every check ends in one :class:`Verdict`.

A verdict holds what a run was held to (its :class:`~parity.budget.Comparison` s, each a tensor against
the budget of parity/budget.py) and the findings that are not tensor comparisons: ``noise`` (the
realized masks or ``p`` are not the published noising), ``crash`` (the target raised), a bitwise
``mismatch`` or a ``hazard`` (a property's plain ``AssertionError`` is a finding of the kind its record
names). :func:`judge` turns them into one verdict, and a failing one raises one :class:`ParityFailure`
whose message leads with the kinds, because the remedy differs by kind.

Kept apart from the budget rule because the two change for different reasons: the budget with what
rounding is (a dtype, a trajectory), the verdict with what a user must be told.
"""
from __future__ import annotations

import math
import os
from collections.abc import Iterable
from dataclasses import dataclass, field

from parity.budget import Comparison

#: Every kind a verdict may name (docs/design.md, Verdict kinds).
KINDS = ("normalisation", "precision", "noise", "non-finite", "input-contract", "crash", "mismatch", "hazard")



@dataclass(frozen=True)
class Finding:
    """A difference that is not a tensor held to a budget: ``noise``, ``crash``, a bitwise ``mismatch``, a ``hazard``."""

    kind: str
    message: str
    step: int | None = None
    rank: int | None = None
    #: The part of a run it belongs to (``train``, ``evaluation``), judged apart; None for a whole check.
    phase: str | None = None

    def describe(self) -> str:
        where = "".join(
            [f"rank {self.rank} " if self.rank is not None else "", f"step {self.step} " if self.step is not None else ""]
        )
        return f"[{self.kind}] {where}{self.message}"


@dataclass
class Verdict:
    """Everything a run was held to, and what kind of difference each failure is."""

    comparisons: list[Comparison]
    findings: list[Finding] = field(default_factory=list)
    strict_precision: bool = False
    #: Why a passing verdict means nothing at this precision (see :func:`informativeness`), or None.
    uninformative: str | None = None
    #: What is wrong, in one sentence a user can act on: the named objective a wrong trainer computes
    #: where a run can name it, else what the comparisons measure (:func:`measured_diagnosis`); None when it holds.
    diagnosis: str | None = None

    @property
    def failures(self) -> list[Comparison]:
        """Comparisons that fail the verdict (a precision finding only when precision is strict)."""
        return [
            c for c in self.comparisons if not c.holds and (c.kind != "precision" or self.strict_precision)
        ]

    @property
    def notes(self) -> list[Comparison]:
        """Precision findings on a verdict that passes them (not strict)."""
        return [] if self.strict_precision else [c for c in self.comparisons if c.kind == "precision"]

    @property
    def holds(self) -> bool:
        return not self.failures and not self.findings

    @property
    def kinds(self) -> list[str]:
        """The kinds of every failure and finding (and of the notes), in ``KINDS`` order."""
        present = {c.kind for c in self.comparisons if not c.holds} | {f.kind for f in self.findings}
        return [kind for kind in KINDS if kind in present]

    @property
    def failure_kinds(self) -> list[str]:
        present = {c.kind for c in self.failures} | {f.kind for f in self.findings}
        return [kind for kind in KINDS if kind in present]

    @property
    def worst_ratio(self) -> float:
        return max((c.ratio for c in self.comparisons), default=0.0)

    def summary(self) -> str:
        """One line: ``holds``, or the failing kinds; precision notes appended."""
        if self.holds and self.uninformative:
            text = f"holds, not informative (worst error/budget {self.worst_ratio:.3g})"
        elif self.holds:
            text = f"holds (worst error/budget {self.worst_ratio:.3g})"
        else:
            text = "FAILS: " + ", ".join(self.failure_kinds)
        if self.notes:
            text += f"; note: precision ({len(self.notes)} tensors at {self.notes[0].lower_dtype} rounding)"
        return text

    def describe(self, shown: int = 5) -> str:
        lines = [f.describe() for f in self.findings[:shown]]
        failures = sorted(self.failures, key=lambda c: c.ratio, reverse=True)
        lines += [c.describe() for c in failures[:shown]]
        if len(failures) > shown:
            lines.append(f"... and {len(failures) - shown} more tensors outside their budget")
        if self.holds and self.uninformative:
            lines.append(f"note: {self.uninformative}")
        if self.notes:
            lines.append(
                f"note: {len(self.notes)} tensors exceed the {self.notes[0].precision} budget "
                f"but fit the {self.notes[0].lower_dtype} "
                f"budget: a precision finding (fails only with strict precision), e.g. {self.notes[0].describe()}"
            )
        return "\n".join(lines)


#: Set to ``1`` (by ``pytest --parity-strict-precision``, or by hand) to make precision findings fail.
STRICT_PRECISION_ENV = "PARITY_STRICT_PRECISION"


def strict_precision_requested() -> bool:
    return os.environ.get(STRICT_PRECISION_ENV, "") not in ("", "0")


def judge(
    comparisons: Iterable[Comparison],
    findings: Iterable[Finding] = (),
    *,
    strict_precision: bool | None = None,
    uninformative: str | None = None,
    diagnosis: str | None = None,
) -> Verdict:
    """``strict_precision`` None: as ``$PARITY_STRICT_PRECISION`` says (default: precision is a note).
    ``diagnosis`` None on a failing verdict: the measured one (:func:`measured_diagnosis`)."""
    strict = strict_precision_requested() if strict_precision is None else strict_precision
    verdict = Verdict(list(comparisons), list(findings), strict, uninformative, diagnosis)
    if not verdict.holds and verdict.diagnosis is None:
        verdict.diagnosis = measured_diagnosis(verdict)
    return verdict


#: The quantities a wrong count scales (a parameter after an update only follows its gradient).
SCALED = ("loss", "grad", "eval loss", "batch loss")
#: Factors within this relative spread of each other are one factor: a wrong count scales every tensor alike.
SAME_FACTOR = 0.01


def measured_diagnosis(verdict: Verdict) -> str:
    """What a failing verdict measures, in one sentence: the first finding, or, for tensors outside
    their budget, the factor of out on golden over the failing tensors of the first failing step.

    One factor on every tensor is a wrong count (a loss divided by the wrong number); factors that
    differ from tensor to tensor are terms weighted unequally (per-microbatch means); a factor of 1
    with an error far above rounding is a different value, not a scale."""
    if verdict.findings:
        finding = verdict.findings[0]
        return next((line.strip() for line in finding.message.splitlines() if line.strip()), finding.kind)
    failures = verdict.failures
    stepped = [c for c in failures if c.step is not None]
    step = min((c.step for c in stepped), default=None)
    at_step = [c for c in failures if c.step == step] if stepped else failures
    where = f"step {step}" if step is not None else "the run"
    if broken := next((c for c in at_step if not math.isfinite(c.error)), None):
        return f"{broken.name} is not finite (out {broken.out_value:.6g}, golden {broken.golden_value:.6g})"
    if all(c.kind == "precision" for c in at_step):
        first = at_step[0]
        said = (f"{len(at_step)} tensors of {where} exceed the {first.precision} budget but fit" if len(at_step) > 1
                else f"{first.name} exceeds the {first.precision} budget but fits")
        return f"{said} the {first.lower_dtype} one: arithmetic in {first.lower_dtype} inside a {first.precision} run"
    # A count scales the losses and gradients; parameters after an update only follow them.
    counted = [c for c in at_step if c.quantity in SCALED]
    scaled = counted or at_step
    compared = [c for c in verdict.comparisons if c.step == step and (c.quantity in SCALED or not counted)]
    factors = sorted(c.slope for c in scaled if c.slope is not None)
    if not factors:
        worst = max(at_step, key=lambda c: c.ratio)
        return (f"{worst.name} is {worst.ratio:.3g} x its budget from the golden (out {worst.out_value:.6g}, "
                f"golden {worst.golden_value:.6g})")
    nouns = ("loss and gradient", "losses and gradients") if counted else ("tensor", "tensors")
    every = f"every {nouns[0]}" if len(scaled) == len(compared) else f"{len(scaled)} of {len(compared)} {nouns[1]}"
    low, high = factors[0], factors[-1]
    middle = factors[len(factors) // 2]
    if high - low <= SAME_FACTOR * abs(middle) and abs(middle - 1) > SAME_FACTOR:
        said = f"out = {middle:.3f} x golden on {every} of {where}"
        if len(factors) == 1:
            return f"{said} ({scaled[0].name})"
        return f"{said}: the loss is divided by the wrong count"
    if high - low > SAME_FACTOR * max(abs(middle), 1e-12):
        return (f"out = {low:.3f} to {high:.3f} x golden over {every} of {where}: not one factor, so the terms are "
                "weighted unequally (e.g. per-microbatch means instead of one count over the window)")
    worst = max(at_step, key=lambda c: c.ratio)
    return (f"out = golden in scale on {every} of {where}, but {worst.name} differs by {worst.relative_error:.2g} of "
            f"its magnitude ({worst.ratio:.3g} x its budget): a different value, not a wrong count")


class ParityFailure(AssertionError):
    """A run broke parity: its kinds and its diagnosis lead the message (``normalisation: out = ...``)."""

    def __init__(self, verdict: Verdict):
        self.verdict = verdict
        described = verdict.describe()
        # A diagnosis that only repeats the first finding (a property's plain AssertionError) is said once.
        said = verdict.diagnosis and verdict.diagnosis not in described.split("\n", 1)[0]
        super().__init__(f"{', '.join(verdict.failure_kinds)}:{' ' + verdict.diagnosis if said else ''}\n{described}")


def assert_verdict(verdict: Verdict) -> Verdict:
    """Raise :class:`ParityFailure` unless the verdict holds; return it (notes included) otherwise."""
    if not verdict.holds:
        raise ParityFailure(verdict)
    return verdict
