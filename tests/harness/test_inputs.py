"""Only the rows of docs/security.md's table of inputs may run code, read statically from every call of the shipped
code (``oracle``, ``impl``, ``parity``), so a new reader of outside data that could construct an object or import a
module fails here until it has its row; and a target name is only ever a name, never an import path.

A parser of plain data (``json``, ``tomllib``) builds only JSON's values, so it may read anywhere; the rows of the
table say what bounds each outside file (docs/security.md, Inputs).
"""

from __future__ import annotations

import ast
import sys
import tempfile
from pathlib import Path

import pytest

from parity.targets import UnknownTargetError, get_target

REPOSITORY = Path(__file__).resolve().parents[2]
CODE = sorted(path for package in ("oracle", "impl", "parity") for path in (REPOSITORY / package).rglob("*.py"))
#: Calls that build arbitrary objects from bytes or run the code they are given.
RUNS_CODE = {"pickle.load", "pickle.loads", "marshal.load", "marshal.loads", "torch.load", "np.load", "numpy.load",
             "yaml.load", "yaml.unsafe_load", "shelve.open", "eval", "exec", "__import__", "importlib.import_module",
             "entry_point.load", "get_class_from_dynamic_module"}
#: Where each may stand, and why (docs/security.md, Inputs).
ALLOWED = {
    # a child forked from this process sends back its result over a pipe: no file, and the child runs the
    # target code of the user's choosing, which could do anything already
    ("parity/report/isolation.py", "pickle.loads"),
    # the registry: an interface is a module:attribute of a target's own, an entry point the package installed
    ("parity/targets/interfaces.py", "importlib.import_module"),
    ("parity/targets/__init__.py", "entry_point.load"),
    # a causal-LM launch's ranks write their records into a private folder the launch made; read back weights-only
    ("parity/training/causal/drivers/ranks.py", "torch.load"),
    # NVIDIA's remote code, from the folder or pinned Hub id the user names
    ("oracle/remote_code.py", "get_class_from_dynamic_module"),
}


def calls(path: Path) -> set[tuple[str, str]]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and (name := ast.unparse(node.func)) in RUNS_CODE:
            found.add((str(path.relative_to(REPOSITORY)), name))
    return found


def test_only_the_audited_readers_can_run_code():
    found = set().union(*(calls(path) for path in CODE))
    assert found - ALLOWED == set(), "a reader that can run code without a row in docs/security.md"
    assert found >= ALLOWED  # a row whose reader is gone is stale


def test_every_allowed_reader_has_its_row_in_the_docs():
    text = (REPOSITORY / "docs" / "security.md").read_text()
    assert all(f"`{path}`" in text for path, _ in ALLOWED)


def test_a_target_name_is_never_imported(tmp_path, monkeypatch):
    """``--target``/``--parity-target`` name a built-in or an installed entry point; a name spelled as an import path
    imports nothing (docs/security.md, Targets)."""
    (tmp_path / "planted_adapter.py").write_text(f"import pathlib\npathlib.Path({str(tmp_path / 'marker')!r}).touch()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("planted_adapter:TARGET", "planted_adapter"):
        with pytest.raises(UnknownTargetError, match=f"unknown target {name!r}"):
            get_target(name)
    assert "planted_adapter" not in sys.modules and not (tmp_path / "marker").exists()


@pytest.mark.needs("megatron-core")
def test_megatron_loads_index_caches_only_from_folders_the_run_made():
    """megatron reads its index cache with ``numpy.load(allow_pickle=True)``: the harness hands it a folder inside a
    fresh temporary one it made, empty until megatron writes there (docs/security.md, Inputs)."""
    import numpy as np

    from parity.dataset.files import written
    from parity.strategies.pipeline import PIPELINE_CASES
    from parity.table.checks.pipeline import Written

    pipeline = Written(PIPELINE_CASES[0])
    documents = written([np.array([1, 2, 0], dtype=np.int64)], vocab_size=8)
    for made, prefix in ((pipeline.folder, "parity-pipeline-"), (documents.folder, "parity-files-")):
        assert Path(made.name).name.startswith(prefix) and Path(made.name).parent == Path(tempfile.gettempdir())
    cache = Path(pipeline.cache())
    assert cache.parent == Path(pipeline.folder.name) and not cache.exists()
