"""Docs that match the code: every repository path the docs and docstrings name exists.

A path is a token that starts at one of the repository's top-level folders (``parity/...``,
``tests/quality``, ``docs/budget.md``), written anywhere in docs/*.md, the README, or a docstring
of the shipped code (``oracle``, ``impl``, ``parity``); and every relative link of a Markdown file.
Names of other projects' files (``megatron/core/...``, NVIDIA's ``modeling_*.py``) start elsewhere
and are not read; a ``path:line`` or ``path::test`` keeps only its path.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parents[2]
TOP_LEVEL = ("docs", "impl", "oracle", "parity", "tests", ".ci", ".github")
#: A path token: a top-level folder, a slash, path characters; not inside another path or a URL.
PATH = re.compile(r"(?<![\w./-])((?:" + "|".join(re.escape(top) for top in TOP_LEVEL) + r")/[\w./*-]*)")
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
