"""Which tests need what the README's install does not bring (tests/optional_parts.py; docs/running.md).

Read statically from every test module, so that a new test that needs an optional part and does not say so
fails here, in the default run of a full install, before it can fail the default install of a new user (where
``.ci/run``'s ``tox -e bare`` would then catch it, minutes later). What counts as needing a part:

* megatron-core: importing ``megatron`` or the harness's megatron modules (the dataset wing's, megatron's schedule),
  or selecting a megatron target by name; and no test module may import megatron at its top, where a missing
  package is a collection error no marker can skip;
* redis-server: a test that takes the ``redis_url`` fixture (the marker on the test, its class or module);
* chromium: naming the browser; hypofuzz: importing it or running ``python -m parity fuzz``;
* trl: importing ``trl`` or the harness's TRL driver (``parity.training.causal.drivers.trl_sft``);
* litgpt, torchtune, torchtitan: importing the library or its loop (``parity.training.causal.drivers.libraries``),
  or selecting its target by name.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.optional_parts import OPTIONAL_PARTS

REPOSITORY = Path(__file__).resolve().parents[2]
MEGATRON_MODULES = ("megatron", "parity.dataset.megatron", "parity.dataset.megatron_pipeline",
                    "parity.dataset.megatron_mock", "parity.dataset.files",
                    "parity.training.causal.drivers.megatron_schedule")  # fmt: skip
MEGATRON_TARGETS = ("megatron-core", "megatron-schedule")
TRL_MODULES = ("trl", "parity.training.causal.drivers.trl_sft")
#: part -> the modules that need it; each part's targets are named ``PART:...`` (parity/targets/catalogue.py).
LIBRARY_MODULES = {"litgpt": ("litgpt", "lightning", "parity.training.causal.drivers.libraries.litgpt_fit"),
                   "torchtune": ("torchtune", "parity.training.causal.drivers.libraries.torchtune_recipe"),
                   "torchtitan": ("torchtitan", "parity.training.causal.drivers.libraries.torchtitan_step")}


def harness_test_modules() -> list[Path]:
    """Every test module but this one, whose planted sources name every part on purpose."""
    modules = sorted((REPOSITORY / "tests").rglob("test_*.py")) + sorted((REPOSITORY / "parity" / "suite").glob("test_*.py"))
    return [path for path in modules if path != Path(__file__).resolve()]


def _imported(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
        return [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
    return []


def _is_megatron(module: str) -> bool:
    return any(module == name or module.startswith(name + ".") for name in MEGATRON_MODULES)


def _strings(node: ast.AST) -> list[str]:
    return [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def _declared(tree: ast.AST) -> set[str]:
    """Every part a ``needs(...)`` marker names anywhere in the module."""
    return {
        argument.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "needs"
        for argument in node.args
        if isinstance(argument, ast.Constant)
    }


def _needs_on(function: ast.FunctionDef, tree: ast.Module) -> set[str]:
    """The parts declared on ``function`` itself, its class, or the module's ``pytestmark``."""
    own = {part for decorator in function.decorator_list for part in _declared(decorator)}
    module = {part for node in tree.body if isinstance(node, ast.Assign)
              and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets) for part in _declared(node)}
    classes = {part for node in tree.body if isinstance(node, ast.ClassDef) and function in node.body
               for decorator in node.decorator_list for part in _declared(decorator)}
    return own | module | classes


def needed_parts(path: Path) -> dict[str, str]:
    """part -> why, for every part the module at ``path`` touches without declaring it."""
    tree = ast.parse(path.read_text())
    declared, missing = _declared(tree), {}
    for node in tree.body:
        for module in _imported(node):
            if _is_megatron(module) and module.partition(".")[0] == "megatron":
                missing["megatron-core"] = f"imports {module} at the module's top (import it inside the test)"
    for node in ast.walk(tree):
        if any(_is_megatron(module) for module in _imported(node)) and "megatron-core" not in declared:
            missing.setdefault("megatron-core", f"imports {_imported(node)[0]} (line {node.lineno})")
        if (isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "get_target"
                and any(s.startswith(MEGATRON_TARGETS) for s in _strings(node)) and "megatron-core" not in declared):
            missing.setdefault("megatron-core", f"selects a megatron target (line {node.lineno})")
        if (isinstance(node, ast.FunctionDef) and node.name.startswith("test_")
                and any(a.arg == "redis_url" for a in node.args.args) and "redis-server" not in _needs_on(node, tree)):
            missing.setdefault("redis-server", f"{node.name} takes redis_url")
        if any(m.partition(".")[0] == "hypofuzz" for m in _imported(node)) and "hypofuzz" not in declared:
            missing.setdefault("hypofuzz", f"imports hypofuzz (line {node.lineno})")
        if isinstance(node, ast.List) and "fuzz" in _strings(node) and "parity" in _strings(node) and "hypofuzz" not in declared:
            missing.setdefault("hypofuzz", f"runs python -m parity fuzz (line {node.lineno})")
        if any(m == t or m.startswith(t + ".") for m in _imported(node) for t in TRL_MODULES) and "trl" not in declared:
            missing.setdefault("trl", f"imports {_imported(node)[0]} (line {node.lineno})")
        for part, modules in LIBRARY_MODULES.items():
            if part in declared:
                continue
            if any(m == t or m.startswith(t + ".") for m in _imported(node) for t in modules):
                missing.setdefault(part, f"imports {_imported(node)[0]} (line {node.lineno})")
            if any(s.startswith(f"{part}:") or f"--target={part}:" in s for s in _strings(node)):
                missing.setdefault(part, f"selects a {part} target (line {node.lineno})")
    if any("chromium" in s for s in _strings(tree)) and "chromium" not in declared:
        missing["chromium"] = "names the browser"
    return missing


@pytest.mark.parametrize("path", harness_test_modules(), ids=lambda path: str(path.relative_to(REPOSITORY)))
def test_a_test_that_needs_an_optional_part_says_so(path):
    assert needed_parts(path) == {}, "mark each test with @pytest.mark.needs(PART) (tests/optional_parts.py)"


def test_every_marker_names_a_known_part():
    named = set().union(*(_declared(ast.parse(path.read_text())) for path in harness_test_modules()))
    assert named and named <= set(OPTIONAL_PARTS), sorted(named - set(OPTIONAL_PARTS))


@pytest.mark.parametrize(
    ("source", "part"),
    [
        ("import megatron.core\n\ndef test_a():\n    pass\n", "megatron-core"),
        ("def test_a():\n    from parity.dataset.megatron import megatron_version\n", "megatron-core"),
        ("def test_a():\n    get_target('megatron-core:fixed')\n", "megatron-core"),
        ("def test_a(redis_url):\n    pass\n", "redis-server"),
        ("def test_a():\n    run([sys.executable, '-m', 'parity', 'fuzz'])\n", "hypofuzz"),
        ("BROWSERS = ('chromium',)\n", "chromium"),
        ("def test_a():\n    from parity.training.causal.drivers.trl_sft import run_sft\n", "trl"),
    ],
    ids=["top-import", "wing-import", "target", "redis", "fuzz", "browser", "trl"],
)
def test_the_reader_catches_a_planted_unmarked_need(tmp_path, source, part):
    (tmp_path / "test_planted.py").write_text(source)
    assert part in needed_parts(tmp_path / "test_planted.py")
    marked = source.replace("def test_a", f"@pytest.mark.needs({part!r})\ndef test_a")
    if marked == source:
        marked = f"pytestmark = pytest.mark.needs({part!r})\n" + source
    (tmp_path / "test_planted.py").write_text(marked)
    assert part not in needed_parts(tmp_path / "test_planted.py") or part == "megatron-core" and source.startswith("import")


def test_an_absent_part_skips_naming_its_install(pytester, monkeypatch):
    monkeypatch.setitem(OPTIONAL_PARTS, "hypofuzz", (lambda: False, "pip install hypofuzz (or tox -e fuzz)"))
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.needs("hypofuzz")
        def test_campaign():
            raise AssertionError("ran without its part")
        """
    )
    result = pytester.runpytest_inprocess("-p", "tests.optional_parts", "-p", "no:cacheprovider", "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*needs hypofuzz, not installed here: pip install hypofuzz (or tox -e fuzz)*"])


def test_a_part_no_row_names_is_a_usage_error_before_any_test(pytester):
    pytester.makepyfile("import pytest\n\n@pytest.mark.needs('megatron')\ndef test_a():\n    pass\n")
    result = pytester.runpytest_inprocess("-p", "tests.optional_parts", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*needs(megatron): known parts: megatron-core, redis-server, chromium, hypofuzz, trl, litgpt, torchtune, torchtitan"])
