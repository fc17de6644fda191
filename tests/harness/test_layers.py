"""The harness's one rule set of layers (docs/design.md, Layout), read statically from every import
statement of a module, top level or nested.

The base is layered by role as before: case types are plain values, strategies draw them, the
judgement compares results; so a property that needs a case's type does not pull in Hypothesis,
and drawing cases runs nothing. Around the base stand three wings, each importing the base and
itself only, except the one direction docs/design.md names: the report wing reads the dataset and
training wings' results. The entry layer (the property table, the properties, the suite, the
plugin, the CLI, bench) may import anything. One table, :data:`MAY_IMPORT`, states both rules, and
every parity module belongs to exactly one layer, so a new module cannot fall outside the rules.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parents[2]
BASE = ("cases", "strategies", "judgement")
WINGS = ("dataset", "training", "report")
#: Each layer's modules (by dotted prefix; the entry layer is every parity module not named here).
LAYERS = {
    "cases": (
        "parity.cases", "parity.dataset_config", "parity.targets", "parity.devices", "parity.threads", "parity.bounds",
        "parity.releases", "parity.usage", "parity.parent_death",
    ),
    "strategies": ("parity.strategies",),
    "judgement": ("parity.budget", "parity.compare", "parity.crash"),
    "dataset": ("parity.dataset",),
    "training": ("parity.training",),
    "report": ("parity.report",),
}
ENTRY = "entry"
#: The layers a layer may import besides itself: the role order inside the base, the wing rule around it.
MAY_IMPORT = {
    "cases": (),
    "strategies": ("cases",),
    "judgement": ("cases",),
    "dataset": BASE,
    "training": BASE,
    "report": (*BASE, "dataset", "training"),
    ENTRY: (*BASE, *WINGS),
}
#: Case types are plain values: drawing or running them is for the layers after.
NOT_FOR_CASES = ("hypothesis",)


def layer_of(module: str) -> str | None:
    """``module``'s layer; None for a module outside parity (not checked)."""
    if module.partition(".")[0] != "parity" or module == "parity":
        return None
    for layer, prefixes in LAYERS.items():
        if any(module == prefix or module.startswith(prefix + ".") for prefix in prefixes):
            return layer
    return ENTRY


def parity_modules() -> list[str]:
    names = [".".join(path.relative_to(REPOSITORY).with_suffix("").parts).removesuffix(".__init__")
             for path in sorted((REPOSITORY / "parity").rglob("*.py"))]
    return [name for name in names if layer_of(name) is not None]


def module_file(name: str) -> Path | None:
    base = REPOSITORY.joinpath(*name.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def direct_imports(name: str) -> set[str]:
    """Every module named by an import in ``name`` (``from a import b`` names ``a`` and, if it is a module, ``a.b``)."""
    names = set()
    for node in ast.walk(ast.parse(module_file(name).read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names if module_file(f"{node.module}.{alias.name}"))
    return names


def reached(name: str) -> set[str]:
    """The modules ``name`` imports, followed through every parity module on the way."""
    seen, todo = set(), [name]
    while todo:
        for imported in direct_imports(todo.pop()) - seen:
            seen.add(imported)
            if imported.partition(".")[0] == "parity" and module_file(imported):
                todo.append(imported)
    return seen


def violations(module: str, imports: set[str]) -> dict[str, str]:
    """The imports of ``module`` that break the rule: imported module -> its layer."""
    own = layer_of(module)
    return {
        imported: layer
        for imported in imports
        if (layer := layer_of(imported)) is not None and layer != own and layer not in MAY_IMPORT[own]
    }


@pytest.mark.parametrize("module", parity_modules())
def test_a_module_imports_only_what_its_layer_may(module):
    assert violations(module, direct_imports(module)) == {}, f"{module} ({layer_of(module)}) breaks the layer rule"


@pytest.mark.parametrize(
    ("module", "planted"),
    [
        ("parity.training.run", "parity.dataset.compare"),  # a wing importing another wing
        ("parity.dataset.megatron", "parity.report.model"),  # a wing importing the report
        ("parity.training.verdict", "parity.property_table"),  # a wing importing the entry layer
        ("parity.report.scenarios", "parity.__main__"),  # the report importing the CLI
        ("parity.compare", "parity.training.step_compare"),  # the base importing a wing
        ("parity.cases", "parity.strategies"),  # case types importing strategies
    ],
)
def test_the_rule_catches_a_planted_import(module, planted):
    assert violations(module, direct_imports(module) | {planted}) == {planted: layer_of(planted)}


def test_every_wing_and_the_base_have_modules():
    layers = {layer_of(module) for module in parity_modules()}
    assert layers == {*BASE, *WINGS, ENTRY}


def test_case_types_reach_no_strategy_or_run():
    assert sorted(m for m in reached("parity.cases") if m.startswith(NOT_FOR_CASES) or layer_of(m) not in (None, "cases")) == []


def test_the_import_reader_follows_parity_modules():
    assert {"parity.budget", "parity.training.window_run", "oracle.window_reference"} <= reached("parity.training.window_cases")


def test_properties_take_their_case_types_from_the_cases_module():
    from parity import cases
    from parity.properties import dataset, diffusion, training
    from parity.strategies import trainer_cases  # noqa: F401 - exported by parity.strategies

    assert dataset.DatasetCase is cases.DatasetCase and diffusion.WindowCase is cases.WindowCase
    assert training.TrainerCase is cases.TrainerCase
