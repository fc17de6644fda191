"""One property's record (docs/design.md, Properties): what the table is made of, and how a record is run.

Kept apart from the table (parity/table/rows/) because the two change for different reasons: the
record with how a property is run and hunted, the table with which properties exist.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from parity.table.hunt import Hunt, hunt
from parity.targets import Interface, Target, load_attribute


@dataclass(frozen=True)
class Property:
    """One property of the suite."""

    #: ``area/what-it-says``, e.g. ``dataset/matches-oracle``; also the test's name.
    name: str
    interface: Interface
    #: ``check(interface, **arguments[, device=][, target=])``
    check: str
    #: Builds ``{argument: strategy}``.
    arguments: Callable[[], Mapping[str, st.SearchStrategy]]
    #: Builds the ``{argument: value}`` dicts run before any random example (``@example``).
    examples: Callable[[], Sequence[Mapping[str, Any]]] | None = None
    devices: tuple[str, ...] = ("cpu",)
    #: The working dtypes its cases draw (none: no dtype axis); ``bench --dtype`` holds them to one.
    dtypes: tuple[str, ...] = ()
    #: Known-bug targets this property must catch.
    catches: tuple[str, ...] = ()
    #: Fraction of the profile's ``max_examples`` drawn at random (besides the explicit examples): below 1
    #: where an example is a training run, so ``dev`` and ``ci`` stay fast and ``nightly`` still scales it.
    examples_fraction: float = 1.0
    #: Each example is a whole ``Trainer`` run: reported unshrunk outside the nightly profile
    #: (parity.table.run_budget).
    whole_run: bool = False
    #: Runs a failing search may spend after its first failure (parity.table.run_budget.ShrinkBudget): set
    #: where an example is a training run; None leaves shrinking to Hypothesis's own limits.
    shrink_runs: int | None = None
    #: Whether ``bench`` hunts the known bugs with it from the bare strategies.
    hunted: bool = False
    slow: bool = False
    #: A ``Target`` attribute that must be true for the property to apply (e.g. ``promises_copies``).
    only_if: str | None = None
    #: The kind of difference a plain ``AssertionError`` of the check is (docs/design.md, Verdict kinds).
    kind: str = "mismatch"
    #: The report's scenario that runs it (parity/table/scenario.py): ``properties``, or ``validation`` for the
    #: bad input a target must refuse, whose explicit examples are the whole declared space (docs/report.md).
    scenario: str = "properties"
    #: The pytest-xdist group its suite test runs in: a record whose corners read the session's two-rank launch
    #: (``parity.training.launch.session.CAUSAL_SESSION``, one per process) joins the tests that read it.
    xdist_group: str | None = None

    @property
    def test_name(self) -> str:
        return "test_" + self.name.replace("/", "__").replace("-", "_")

    def check_function(self) -> Callable[..., None]:
        return load_attribute(self.check)

    def strategies(self, dtype: str | None = None) -> dict[str, st.SearchStrategy]:
        """The arguments' strategies; with ``dtype``, every drawn case in that working dtype
        (``parity.cases.at_dtype``), which must be one of the property's ``dtypes``."""
        from parity.cases import at_dtype

        strategies = dict(self.arguments())
        if dtype is None:
            return strategies
        if dtype not in self.dtypes:
            raise ValueError(f"{self.name} draws {', '.join(self.dtypes) or 'no dtype'}; got {dtype!r}")
        return {name: strategy.map(functools.partial(at_dtype, dtype=dtype)) for name, strategy in strategies.items()}

    def at_dtype(self, arguments: Mapping[str, Any], dtype: str | None) -> dict[str, Any]:
        """Explicit arguments as ``strategies(dtype)`` would draw them."""
        from parity.cases import at_dtype

        return {name: value if dtype is None else at_dtype(value, dtype) for name, value in arguments.items()}

    def strategy(self, dtype: str | None = None) -> st.SearchStrategy[dict[str, Any]]:
        return st.fixed_dictionaries(self.strategies(dtype))

    def explicit_examples(self) -> list[dict[str, Any]]:
        return [] if self.examples is None else [dict(example) for example in self.examples()]

    def run(
        self, subject: Any, arguments: Mapping[str, Any], device: str = "cpu", target: Target | None = None
    ) -> list[str]:
        """One example: ``check(subject, **arguments)``. Returns the check's notes (none when it
        returns nothing); a counterexample raises :class:`~parity.compare.ParityFailure`, whose
        verdict names the kind (a plain ``AssertionError`` of the check is this record's ``kind``)."""
        from parity.compare import Finding, ParityFailure, judge

        check = self.check_function()
        accepted = inspect.signature(check).parameters
        extra = {key: value for key, value in (("device", device), ("target", target)) if key in accepted}
        try:
            return list(check(subject, **arguments, **extra) or ())
        except ParityFailure:
            raise
        except AssertionError as failure:
            raise ParityFailure(judge([], [Finding(self.kind, str(failure))])) from failure

    def applies_to(self, target: Target) -> bool:
        return target.provides(self.interface) and (self.only_if is None or bool(getattr(target, self.only_if)))

    def why_not(self, target: Target) -> str:
        """Why the property does not apply to ``target`` (the skip reason)."""
        if not target.provides(self.interface):
            return f"target {target.name!r} has no {self.interface} interface"
        return f"target {target.name!r} is not {self.only_if}"  # one reason for every such property, grouped once

    def hunt(
        self,
        subject: Any,
        *,
        max_examples: int,
        seed: int | None = None,
        shrink: bool = True,
        explicit: bool = True,
        device: str = "cpu",
        target: Target | None = None,
        dtype: str | None = None,
        drawn: bool = True,
        corners: Callable[[Mapping[str, Any]], bool] | None = None,
    ) -> Hunt:
        """Search for a counterexample on ``subject``: the explicit examples first (unless
        ``explicit=False``, to measure the random search alone; ``corners``: those it accepts only), then
        drawn ones (unless ``drawn=False``). A whole-run
        property is never shrunk here, as in the default suite (parity.table.run_budget): shrinking a
        training run costs minutes, and its failure message already names the kind of difference.
        ``dtype``: every drawn case in that working dtype (``strategies``)."""
        chosen = [arguments for arguments in self.explicit_examples() if corners is None or corners(arguments)]
        examples = [(self.at_dtype(arguments, dtype),) for arguments in chosen] if explicit else []
        return hunt(
            lambda target_subject, arguments: self.run(target_subject, arguments, device, target),
            subject,
            st.tuples(self.strategy(dtype)),
            max_examples=max_examples,
            seed=seed,
            shrink=shrink and not self.whole_run,
            examples=examples,
            shrink_runs=self.shrink_runs,
            drawn=drawn,
        )
