"""The harness's one rule set of floors (docs/design.md, Layout), read statically from every import
statement of a module, top level or nested.

From the bottom: the safety floor a session puts around target code imports nothing else of parity;
the base is layered by role (case types are plain values, strategies draw them, the judgement compares
results), so a property that needs a case's type does not pull in Hypothesis and drawing cases runs
nothing. The dataset and training wings stand on the base, each importing itself and what lies below;
the report reads both wings' results; the property table drives the wings and joins the report; the
fleet runs the table at scale; the entry points (the CLI, the plugin, the installed suite, the former
module names) may import anything. One table, :data:`MAY_IMPORT`, states the order, every parity
module belongs to exactly one floor, so a new module cannot fall outside the rules, and no import
circle may stand anywhere, inside a floor or a wing included.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parents[2]
#: Each floor's modules, by dotted prefix (the entry floor is every parity module not named here).
LAYERS = {
    "safety": ("parity.safety",),
    "cases": ("parity.cases", "parity.trainer_space", "parity.dataset_config", "parity.targets", "parity.contracts",
              "parity.devices"),
    "strategies": ("parity.strategies",),
    "judgement": ("parity.budget", "parity.compare"),
    "dataset": ("parity.dataset",),
    "training": ("parity.training",),
    "report": ("parity.report",),
    "table": ("parity.table",),
    "fleet": ("parity.fleet",),
}
ENTRY = "entry"
BASE = ("safety", "cases", "strategies", "judgement")
#: The floors a floor may import besides itself: the role order inside the base, the wings beside each other.
MAY_IMPORT = {
    "safety": (),
    "cases": ("safety",),
    "strategies": ("safety", "cases"),
    "judgement": ("safety", "cases"),
    "dataset": BASE,
    "training": BASE,
    "report": (*BASE, "dataset", "training"),
    "table": (*BASE, "dataset", "training", "report"),
    "fleet": (*BASE, "dataset", "training", "report", "table"),
    ENTRY: (*LAYERS,),
}
#: Case types are plain values: drawing or running them is for the floors after.
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


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every import circle in ``graph`` (module -> the modules it imports): its strongly connected
    components of more than one module, or of one module importing itself (Tarjan's algorithm)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for successor in sorted(graph.get(node, ())):
            if successor not in index:
                visit(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            component = []
            while not component or component[-1] != node:
                component.append(stack.pop())
                on_stack.discard(component[-1])
            if len(component) > 1 or node in graph.get(node, ()):
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def import_graph() -> dict[str, set[str]]:
    """Every parity module -> the parity modules it imports (a package's ``__init__`` is a module of its own)."""
    modules = set(parity_modules())
    return {module: direct_imports(module) & modules for module in modules}


@pytest.mark.parametrize("module", parity_modules())
def test_a_module_imports_only_what_its_layer_may(module):
    assert violations(module, direct_imports(module)) == {}, f"{module} ({layer_of(module)}) breaks the layer rule"


@pytest.mark.parametrize(
    ("module", "planted"),
    [
        ("parity.training.diffusion.drivers.trainer_run", "parity.dataset.compare"),  # a wing importing another wing
        ("parity.dataset.megatron", "parity.report.model"),  # a wing importing the report
        ("parity.training.diffusion.verdict", "parity.table.rows"),  # a wing importing the table
        ("parity.report.scenarios", "parity.table.scenario"),  # the report importing the table
        ("parity.table.hunt", "parity.fleet.database"),  # the table importing the fleet
        ("parity.fleet.bench", "parity.__main__"),  # the fleet importing the CLI
        ("parity.compare", "parity.training.step_compare"),  # the base importing a wing
        ("parity.cases", "parity.strategies"),  # case types importing strategies
        ("parity.safety.crash", "parity.targets"),  # the safety floor importing the base
        ("parity.targets.catalogue", "parity.cli.report"),  # the base importing the CLI
        ("parity.training.step_compare", "parity.report.model"),  # the wing's shared top importing the report
    ],
)
def test_the_rule_catches_a_planted_import(module, planted):
    assert violations(module, direct_imports(module) | {planted}) == {planted: layer_of(planted)}


def test_no_import_circle_stands_anywhere():
    assert circles(import_graph()) == []


def test_a_planted_circle_inside_a_wing_is_caught():
    """The circle this layout removed (megatron.py <-> megatron_pipeline.py), planted back."""
    graph = import_graph()
    graph["parity.dataset.megatron"] = graph["parity.dataset.megatron"] | {"parity.dataset.megatron_pipeline"}
    graph["parity.dataset.megatron_pipeline"] = graph["parity.dataset.megatron_pipeline"] | {"parity.dataset.megatron"}
    assert circles(graph) == [["parity.dataset.megatron", "parity.dataset.megatron_pipeline"]]


def test_the_circle_finder_sees_a_long_circle_and_a_self_import():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"a"}, "b": set()}) == [["a"]]


def test_every_floor_has_modules():
    assert {layer_of(module) for module in parity_modules()} == {*LAYERS, ENTRY}


def test_case_types_reach_no_strategy_or_run():
    below = (None, "safety", "cases")
    assert sorted(m for m in reached("parity.cases") if m.startswith(NOT_FOR_CASES) or layer_of(m) not in below) == []


def test_the_import_reader_follows_parity_modules():
    assert {"parity.budget", "parity.training.diffusion.drivers.window_run", "oracle.window_reference"} <= reached("parity.training.diffusion.drivers.window_cases")


def test_properties_take_their_case_types_from_the_cases_module():
    from parity import cases
    from parity.strategies import trainer_cases  # noqa: F401 - exported by parity.strategies
    from parity.table.checks import dataset, diffusion, training

    assert dataset.DatasetCase is cases.DatasetCase and diffusion.WindowCase is cases.WindowCase
    assert training.TrainerCase is cases.TrainerCase
