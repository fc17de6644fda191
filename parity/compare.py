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

import os
from collections.abc import Iterable
from dataclasses import dataclass, field

from parity.budget import Comparison

#: Every kind a verdict may name (docs/design.md, Verdict kinds).
KINDS = ("normalisation", "precision", "noise", "non-finite", "crash", "mismatch", "hazard")



@dataclass(frozen=True)
class Finding:
    """A difference that is not a tensor held to a budget: ``noise``, ``crash``, a bitwise ``mismatch``, a ``hazard``."""

    kind: str
    message: str
    step: int | None = None
    rank: int | None = None

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
) -> Verdict:
    """``strict_precision`` None: as ``$PARITY_STRICT_PRECISION`` says (default: precision is a note)."""
    strict = strict_precision_requested() if strict_precision is None else strict_precision
    return Verdict(list(comparisons), list(findings), strict, uninformative)


class ParityFailure(AssertionError):
    """A run broke parity: its kinds lead the message (``normalisation, noise: ...``)."""

    def __init__(self, verdict: Verdict):
        self.verdict = verdict
        super().__init__(f"{', '.join(verdict.failure_kinds)}:\n{verdict.describe()}")


def assert_verdict(verdict: Verdict) -> Verdict:
    """Raise :class:`ParityFailure` unless the verdict holds; return it (notes included) otherwise."""
    if not verdict.holds:
        raise ParityFailure(verdict)
    return verdict
