"""Docs that match the code: every repository path the docs and docstrings name exists, and every
dotted ``parity.x.y`` name the docs print imports.

A path is a token that starts at one of the repository's top-level folders (``parity/...``,
``tests/quality``, ``docs/budget.md``), written anywhere in docs/*.md, the README, or a docstring
of the shipped code (``oracle``, ``impl``, ``parity``); and every relative link of a Markdown file.
Names of other projects' files (``megatron/core/...``, NVIDIA's ``modeling_*.py``) start elsewhere
and are not read; a ``path:line`` or ``path::test`` keeps only its path. A dotted name
(``parity.training.diffusion.verdict.trainer_verdict``, ``python -m parity.ddp_cases``) is a module, or a
module and the attributes read off it, so a rename that misses a doc fails here, not in a
reader's shell.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parents[2]
TOP_LEVEL = ("docs", "impl", "oracle", "parity", "tests", ".ci", ".github")
#: A path token: a top-level folder, a slash, path characters; not inside another path or a URL.
PATH = re.compile(r"(?<![\w./-])((?:" + "|".join(re.escape(top) for top in TOP_LEVEL) + r")/[\w./*-]*)")
#: A dotted name in the parity package: ``parity`` and at least one more part.
DOTTED = re.compile(r"(?<![\w.])parity(?:\.[A-Za-z_]\w*)+")
LINK = re.compile(r"\]\(([^)\s#]+)(?:#[^)]*)?\)")
DOCS = sorted([*REPOSITORY.glob("docs/*.md"), REPOSITORY / "README.md"])
CODE = sorted(path for package in ("oracle", "impl", "parity") for path in (REPOSITORY / package).rglob("*.py"))


def named_paths(text: str) -> set[str]:
    """The repository paths ``text`` names (a trailing full stop or comma is punctuation)."""
    return {match.rstrip(".,") for match in PATH.findall(text) if "*" not in match}


def docstrings(path: Path) -> str:
    tree = ast.parse(path.read_text())
    nodes = [tree, *(n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)))]
    return "\n".join(filter(None, (ast.get_docstring(node) for node in nodes)))


def named_names(text: str) -> set[str]:
    return set(DOTTED.findall(text))


def unresolved(name: str) -> str | None:
    """None when ``name`` is a module, or attributes of the longest module prefix; else what is missing."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attribute in parts[cut:]:
            if not hasattr(found, attribute):
                return f"{name}: {'.'.join(parts[:cut])} has no {attribute!r}"
            found = getattr(found, attribute)
        return None
    return f"{name}: no such module"


def missing(paths: set[str], base: Path = REPOSITORY) -> list[str]:
    return sorted(path for path in paths if not (base / path).exists())


def label(path: Path) -> str:
    return str(path.relative_to(REPOSITORY))


@pytest.mark.parametrize("doc", DOCS, ids=label)
def test_every_path_a_doc_names_exists(doc):
    text = doc.read_text()
    assert missing(named_paths(text)) == []
    links = {link for link in LINK.findall(text) if "://" not in link and not link.startswith("mailto:")}
    assert missing(links, doc.parent) == [], "relative links"


@pytest.mark.parametrize("doc", DOCS, ids=label)
def test_every_dotted_name_a_doc_prints_imports(doc):
    assert sorted(filter(None, map(unresolved, named_names(doc.read_text())))) == []


@pytest.mark.parametrize("module", CODE, ids=label)
def test_every_path_a_docstring_names_exists(module):
    assert missing(named_paths(docstrings(module))) == []


def test_the_reader_finds_paths_and_only_paths():
    text = "See `parity/compare.py`, (docs/budget.md, The floor), tests/quality. Not megatron/core/x.py or a/tests/b."
    assert named_paths(text) == {"parity/compare.py", "docs/budget.md", "tests/quality"}
    assert named_paths("`parity/suite/test_properties.py::test_x` at parity/cases.py:12") == {
        "parity/suite/test_properties.py",
        "parity/cases.py",
    }
    assert missing({"parity/compare.py", "parity/nope.py"}) == ["parity/nope.py"]


def test_the_reader_resolves_dotted_names_and_only_real_ones():
    text = "Run `python -m parity.ddp_cases`; see parity.compare.ParityFailure. Not xparity.cases or a.parity.cases."
    assert named_names(text) == {"parity.ddp_cases", "parity.compare.ParityFailure"}
    assert unresolved("parity.training.diffusion.verdict.trainer_verdict") is None
    assert unresolved("parity.trainer_oracle.trainer_verdict") == "parity.trainer_oracle.trainer_verdict: parity has no 'trainer_oracle'"
    assert unresolved("parity.compare.NoSuchName") == "parity.compare.NoSuchName: parity.compare has no 'NoSuchName'"
