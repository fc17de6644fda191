"""The harness layered by role (docs/design.md, Layout): case types are plain values, strategies draw
them, properties check them, runs drive targets. A lower layer never imports a higher one, so a
property that needs a case's type does not pull in strategies, and drawing cases runs nothing.

Read statically: every import statement of a module (top level or nested), followed through the
``parity`` modules it reaches.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parents[2]
#: Modules that drive a target or the oracle through a run.
RUNS = ("parity.window_run", "parity.window_cases", "parity.trainer_run", "parity.distributed")
#: What each layer must not reach, directly or through other parity modules.
LAYERS = {
    "parity.cases": ("parity.strategies", "parity.properties", "hypothesis", *RUNS),
    "parity.strategies": ("parity.properties", *RUNS),
}


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


@pytest.mark.parametrize("layer", LAYERS)
def test_a_lower_layer_imports_no_higher_one(layer):
    assert not sorted(m for m in reached(layer) if m.startswith(LAYERS[layer]))


def test_the_import_reader_follows_parity_modules():
    assert {"parity.compare", "parity.window_run", "oracle.window_reference"} <= reached("parity.window_cases")


def test_properties_take_their_case_types_from_the_cases_module():
    from parity import cases
    from parity.properties import dataset, diffusion

    assert dataset.DatasetCase is cases.DatasetCase and diffusion.WindowCase is cases.WindowCase
