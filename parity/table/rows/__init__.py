"""The table of properties: one declarative record per property drives every use of it.

In the spirit of PyTorch's OpInfo: a :class:`Property` names its check function, the interface it
needs, the strategies of its arguments, its explicit examples (the upstream triggers), the devices
it runs on and the known bugs it must catch. The pytest suite (:mod:`parity.suite`), the "finds
this bug" checks, ``python -m parity bench`` and the report all read :data:`PROPERTIES`, so adding
a property is one entry (docs/design.md, Properties), in the module of its area: ``dataset.py`` (the GPT
dataset, megatron's pipeline and mock data), ``training.py`` (the diffusion loss, its noise, whole runs),
``validation.py`` (bad input refused), ``causal.py`` (causal-LM training).

The check is a ``"module:attribute"`` path and the strategies and examples are built by functions,
all loaded when a property is used, so reading the table imports neither torch nor transformers.
A check is called as ``check(interface, **arguments)``, plus
``device=`` and ``target=`` when it takes them; it raises ``AssertionError`` on a counterexample and
may return notes (strings: hazards, precision findings) that accompany a passing verdict.
"""

from __future__ import annotations

from parity.table.record import Property
from parity.table.rows.causal import CAUSAL
from parity.table.rows.dataset import DATASET
from parity.table.rows.training import TRAINING
from parity.table.rows.validation import VALIDATION
from parity.targets import Target

#: Every property, in the order the suite and the report run them.
PROPERTIES: tuple[Property, ...] = (*DATASET, *TRAINING, *VALIDATION, *CAUSAL)


def properties_for(target: Target) -> list[Property]:
    return [prop for prop in PROPERTIES if prop.applies_to(target)]


def catching(target_name: str) -> list[Property]:
    """The properties that must catch the known-bug target ``target_name``."""
    return [prop for prop in PROPERTIES if target_name in prop.catches]
