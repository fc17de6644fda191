"""The harness layered by role (docs/design.md, Layout): case types are plain values, strategies draw
them, judgement compares results, runs drive targets, properties check cases. No module imports a
later layer, so a property that needs a case's type does not pull in strategies, and drawing cases
runs nothing.

Read statically: every import statement of a module, top level or nested.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parents[2]
#: parity's layers in order (docs/design.md, Layout): a module imports parity modules only from its own
#: layer or an earlier one. What reads the property table (suite, plugin, CLI, bench) may import anything.
LAYERS = (
    ("cases", ("parity.cases", "parity.dataset_config", "parity.targets", "parity.devices", "parity.threads")),
    ("strategies", ("parity.strategies",)),
    ("judgement", ("parity.compare", "parity.dataset_compare", "parity.crash", "parity.step_compare")),
    (
        "runs",
        (
            "parity.window_run",
            "parity.window_cases",
            "parity.trainer_observe",
            "parity.noise_replay",
            "parity.trainer_run",
            "parity.trainer_oracle",
            "parity.distributed",
            "parity.ddp_cases",
            "parity.megatron_target",
        ),
    ),
    ("properties", ("parity.property_table", "parity.properties", "parity.hunt")),
)
#: Case types are plain values: drawing or running them is for the layers after.
NOT_FOR_CASES = ("hypothesis",)


def layer_of(module: str) -> int | None:
    """The index of ``module``'s layer; None for a module outside the layers (it is not checked)."""
    for index, (_, prefixes) in enumerate(LAYERS):
        if any(module == prefix or module.startswith(prefix + ".") for prefix in prefixes):
            return index
    return None


def layered_modules() -> list[str]:
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


@pytest.mark.parametrize("module", layered_modules())
def test_a_module_imports_no_later_layer(module):
    later = {
        imported: LAYERS[layer_of(imported)][0]
        for imported in direct_imports(module)
        if layer_of(imported) is not None and layer_of(imported) > layer_of(module)
    }
    assert later == {}, f"{module} ({LAYERS[layer_of(module)][0]}) imports a later layer"


def test_case_types_reach_no_strategy_or_run():
    assert sorted(m for m in reached("parity.cases") if m.startswith(NOT_FOR_CASES) or layer_of(m) not in (None, 0)) == []


def test_the_import_reader_follows_parity_modules():
    assert {"parity.compare", "parity.window_run", "oracle.window_reference"} <= reached("parity.window_cases")


def test_properties_take_their_case_types_from_the_cases_module():
    from parity import cases
    from parity.properties import dataset, diffusion, training
    from parity.strategies import trainer_cases  # noqa: F401 - exported by parity.strategies

    assert dataset.DatasetCase is cases.DatasetCase and diffusion.WindowCase is cases.WindowCase
    assert training.TrainerCase is cases.TrainerCase
