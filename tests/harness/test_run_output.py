"""What a run prints (docs/running.md, What a run prints): a property that does not apply is skipped before
Hypothesis runs, one reason once in the summary and never a "Failing explicit example"; a run that names its
target ends with the table of its properties (parity/suite/outcomes.py); the clone's own run reads in one screen.

Each session is a throwaway one in this process (pytest's ``pytester``), on a few cheap properties.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

# Imported here, before pytester's in-process sessions: each one unloads the modules it imported, and torch cannot
# be imported twice in one process.
import parity.suite.test_properties  # noqa: F401

REPOSITORY = Path(__file__).resolve().parents[2]
#: Properties impl lacks the interface of (nothing drawn), and one cheap one it holds.
SKIPPED_AND_HELD = "pipeline or mock or files_match or dataset__indices_match_reference"


def table_rows(output: str) -> dict[str, list[str]]:
    """property -> its cells (device, outcome, the rest), from the table that ends the run: after pytest's own
    summary, its last line right above the closing line."""
    section = output.split("its properties", 1)[1]
    lines = [line for line in section.splitlines() if line.strip()]
    assert "short test summary info" not in section and re.fullmatch(r"\d+ property tests: .*", lines[-2]), output
    assert re.fullmatch(r"=* ?\d+ (passed|failed).* in [\d.]+s.*", lines[-1]), output
    return {cells[0]: cells[1:] for line in section.splitlines()
            if len(cells := re.split(r"\s{2,}", line.strip())) == 4 and "/" in cells[0]}


@pytest.fixture
def session(pytester: pytest.Pytester, harness_self_check):
    def run(*options: str) -> tuple[int, str]:
        result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-n", "0", "-rs", "--pyargs", "parity.suite",
                                              *options)
        return result.ret, "\n".join(result.outlines + result.errlines)
    return run


def test_a_property_that_does_not_apply_is_one_grouped_skip_and_the_table_says_what_each_did(session):
    status, output = session("--parity-target", "impl", "-k", SKIPPED_AND_HELD)
    assert status == 0, output[-3000:]
    assert "Failing explicit example" not in output, output
    skips = [line for line in output.splitlines() if line.startswith("SKIPPED")]
    assert [re.sub(r" \S+:\d+:", "", line) for line in skips] == [
        "SKIPPED [1] target 'impl' is not reads_files",
        "SKIPPED [6] target 'impl' has no pipeline interface",
        "SKIPPED [3] target 'impl' has no mock interface",
    ], output
    rows = table_rows(output)
    assert rows["pipeline/blend-matches-reference"] == ["cpu", "skipped", "target 'impl' has no pipeline interface"]
    assert rows["dataset/files-match-oracle"] == ["cpu", "skipped", "target 'impl' is not reads_files"]
    device, outcome, examples = rows["dataset/indices-match-reference"]
    assert (device, outcome) == ("cpu", "held") and int(examples.split()[0]) >= 25, rows  # its corners and draws
    assert len(rows) == 11 and "11 property tests: 1 held, 10 skipped" in output, output


def test_a_failing_property_is_named_with_its_kind(session):
    status, output = session("--parity-target", "known-bug:cache-alias", "-k", "dataset__matches_oracle or mock")
    assert status == 1, output[-3000:]
    rows = table_rows(output)
    assert rows["dataset/matches-oracle"] == ["cpu", "failed", "mismatch"], output
    assert rows["mock/matches-oracle"] == ["cpu", "skipped", "target 'known-bug:cache-alias' has no mock interface"]


def test_the_clones_run_prints_its_progress_each_skip_reason_once_and_the_closing_line(session):
    """The clone's own configuration (pyproject.toml: ``-q``, pytest's ``-ra``, ``parity_suite = true``, no target
    named): no header, no table, one line per skip reason with its count (docs/running.md, What a run prints)."""
    status, output = session("-c", str(REPOSITORY / "pyproject.toml"), "--rootdir", str(REPOSITORY), "-k", SKIPPED_AND_HELD,
                             "-W", "ignore::pytest.PytestAssertRewriteWarning")  # the harness already imported here
    assert status == 0, output[-3000:]
    lines = [line for line in output.splitlines() if line.strip()]
    assert re.fullmatch(r"[.s]+ +\[100%\]", lines[0]), output
    assert "short test summary info" in lines[1] and len(lines) == 6, output
    assert re.fullmatch(r"1 passed, 10 skipped.* in [\d.]+s", lines[-1]), output


def test_a_session_run_inside_another_leaves_the_hypothesis_profile_as_it_found_it(session):
    """pytester's in-process run loads its own profile globally; left so, every later test of that worker would
    draw with it (the nightly's property tests with 25 examples). The plugin puts the profiles back at its end."""
    from hypothesis import settings

    settings.register_profile("parity-nested-session", settings(max_examples=3))
    before = settings.get_current_profile_name(), settings.default.max_examples, settings.get_profile("nightly")
    status, output = session("--parity-target", "impl", "-k", "mock", "--hypothesis-profile", "parity-nested-session")
    assert status == 0, output[-3000:]
    assert (settings.get_current_profile_name(), settings.default.max_examples, settings.get_profile("nightly")) == before
