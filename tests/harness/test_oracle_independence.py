"""The roles stand alone (docs/design.md, Layout): what each may not import.

The oracle must not share code with what it judges: no import of ``impl`` or ``parity``. Checked
twice: statically, over every import statement in ``oracle/`` (top-level or nested, absolute or
relative), and dynamically, by importing every oracle module in a fresh interpreter and looking at
what ended up in ``sys.modules`` (which also catches ``importlib`` tricks and transitive imports).

The production code does not lean on the harness that judges it: no ``impl`` module imports
``parity`` (impl imports only itself and third-party packages, so the static check over every file
is transitive too). The harness's strategies do not lean on the production code: no module of
``parity/strategies`` imports ``impl``, directly or through the ``parity`` modules it imports
(followed statically by tests/harness/test_layers.py's reader).
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.harness.test_layers import reached

REPOSITORY = Path(__file__).resolve().parents[2]
ORACLE = REPOSITORY / "oracle"
FORBIDDEN = ("impl", "parity")
ORACLE_FILES = sorted(ORACLE.rglob("*.py"))
IMPL_FILES = sorted((REPOSITORY / "impl").rglob("*.py"))
STRATEGY_FILES = sorted((REPOSITORY / "parity" / "strategies").rglob("*.py"))


def imported_packages(path: Path, root: Path = REPOSITORY) -> set[str]:
    """Top-level package of every import in ``path`` (a file under ``root``); a relative import that
    climbs out of ``oracle`` counts as the package it reaches."""
    depth = len(path.relative_to(root).parts) - 1  # oracle/x.py is 1 package deep
    if path.name == "__init__.py":
        depth -= 1
    packages = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            packages.update(alias.name.partition(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                packages.add(node.module.partition(".")[0])
            elif node.level > depth:  # climbs above oracle/: ``from .. import impl``
                packages.update([node.module.partition(".")[0]] if node.module else [a.name for a in node.names])
    return packages


def test_there_are_oracle_files():
    assert ORACLE / "__init__.py" in ORACLE_FILES and ORACLE / "gpt_dataset.py" in ORACLE_FILES


@pytest.mark.parametrize("path", ORACLE_FILES, ids=lambda p: str(p.relative_to(REPOSITORY)))
def test_no_oracle_file_imports_the_implementation_or_the_harness(path):
    assert not imported_packages(path) & set(FORBIDDEN)


def test_the_import_check_sees_every_kind_of_import(tmp_path):
    sneaky = tmp_path / "oracle" / "sneaky.py"
    sneaky.parent.mkdir()
    sneaky.write_text("def f():\n    import impl.gpt_dataset\nfrom parity import targets\nfrom .. import impl\n")
    assert imported_packages(sneaky, root=tmp_path) == {"impl", "parity"}


@pytest.mark.long  # a fresh interpreter importing transformers (7 s); the static check above runs by default
def test_importing_every_oracle_module_loads_neither_impl_nor_parity():
    modules = [
        ".".join(path.relative_to(REPOSITORY).with_suffix("").parts).removesuffix(".__init__")
        for path in ORACLE_FILES
    ]
    script = (
        "import importlib, json, sys\n"
        f"for name in {modules!r}: importlib.import_module(name)\n"
        f"print(json.dumps(sorted(m for m in sys.modules if m.partition('.')[0] in {FORBIDDEN!r})))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=REPOSITORY, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.strip().splitlines()[-1]) == []


def test_there_are_impl_and_strategy_files():
    assert REPOSITORY / "impl" / "gpt_dataset.py" in IMPL_FILES
    assert REPOSITORY / "parity" / "strategies" / "dataset.py" in STRATEGY_FILES


@pytest.mark.parametrize("path", IMPL_FILES, ids=lambda p: str(p.relative_to(REPOSITORY)))
def test_no_impl_file_imports_the_harness(path):
    assert "parity" not in imported_packages(path)


def test_no_strategy_reaches_impl():
    modules = [".".join(path.relative_to(REPOSITORY).with_suffix("").parts).removesuffix(".__init__") for path in STRATEGY_FILES]
    reaches = {module: sorted(m for m in reached(module) if m.partition(".")[0] == "impl") for module in modules}
    assert "parity.dataset_config" in reached("parity.strategies.dataset"), "the import reader must follow parity's modules"
    assert reaches == {module: [] for module in modules}
