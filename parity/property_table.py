"""The table of properties: one declarative record per property drives every use of it.

In the spirit of PyTorch's OpInfo: a :class:`Property` names its check function, the interface it
needs, the strategies of its arguments, its explicit examples (the upstream triggers), the devices
it runs on and the known bugs it must catch. The pytest suite (:mod:`parity.suite`), the "finds
this bug" checks, ``python -m parity bench`` and the report all read :data:`PROPERTIES`, so adding
a property is one entry (docs/design.md, Properties).

Paths are ``"module:attribute"`` strings, loaded when a property is used, so reading the table
imports neither torch nor transformers. A check is called as ``check(interface, **arguments)``, plus
``device=`` and ``target=`` when it takes them; it raises ``AssertionError`` on a counterexample and
may return notes (strings: hazards, precision findings) that accompany a passing verdict.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from parity.hunt import Hunt, hunt
from parity.targets import Interface, Target


def load(path: str) -> Any:
    module, _, attribute = path.partition(":")
    return getattr(importlib.import_module(module), attribute)


@dataclass(frozen=True)
class Property:
    """One property of the suite."""

    #: ``area/what-it-says``, e.g. ``dataset/matches-oracle``; also the test's name.
    name: str
    interface: Interface
    #: ``check(interface, **arguments[, device=])``
    check: str
    #: A function returning ``{argument: strategy}``.
    arguments: str
    #: A sequence of ``{argument: value}`` dicts run before any random example (``@example``).
    examples: str | None = None
    devices: tuple[str, ...] = ("cpu",)
    #: Known-bug targets this property must catch.
    catches: tuple[str, ...] = ()
    #: Fraction of the profile's ``max_examples`` (a whole training run per example costs more).
    examples_fraction: float = 1.0
    #: Whether ``bench`` hunts the known bugs with it from the bare strategies.
    hunted: bool = False
    slow: bool = False

    @property
    def test_name(self) -> str:
        return "test_" + self.name.replace("/", "__").replace("-", "_")

    def check_function(self) -> Callable[..., None]:
        return load(self.check)

    def strategies(self) -> dict[str, st.SearchStrategy]:
        return dict(load(self.arguments)())

    def strategy(self) -> st.SearchStrategy[dict[str, Any]]:
        return st.fixed_dictionaries(self.strategies())

    def explicit_examples(self) -> list[dict[str, Any]]:
        return [] if self.examples is None else [dict(example) for example in load(self.examples)]

    def run(
        self, subject: Any, arguments: Mapping[str, Any], device: str = "cpu", target: Target | None = None
    ) -> list[str]:
        """One example: ``check(subject, **arguments)``; ``AssertionError`` on a counterexample.
        Returns the check's notes (none when it returns nothing)."""
        check = self.check_function()
        accepted = inspect.signature(check).parameters
        extra = {key: value for key, value in (("device", device), ("target", target)) if key in accepted}
        return list(check(subject, **arguments, **extra) or ())

    def applies_to(self, target: Target) -> bool:
        return target.provides(self.interface)

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
    ) -> Hunt:
        """Search for a counterexample on ``subject``: the explicit examples first (unless
        ``explicit=False``, to measure the random search alone), then drawn ones."""
        examples = [(arguments,) for arguments in self.explicit_examples()] if explicit else []
        return hunt(
            lambda target_subject, arguments: self.run(target_subject, arguments, device, target),
            subject,
            st.tuples(self.strategy()),
            max_examples=max_examples,
            seed=seed,
            shrink=shrink,
            examples=examples,
        )


def properties_for(target: Target, table: Sequence[Property] | None = None) -> list[Property]:
    return [prop for prop in (PROPERTIES if table is None else table) if prop.applies_to(target)]


def catching(target_name: str, table: Sequence[Property] | None = None) -> list[Property]:
    """The properties that must catch the known-bug target ``target_name``."""
    return [prop for prop in (PROPERTIES if table is None else table) if target_name in prop.catches]


PROPERTIES: tuple[Property, ...] = ()
