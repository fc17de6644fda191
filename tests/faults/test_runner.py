"""A planted worker death does not hang the suite (parity.safety.xdist_scheduling, docs/faults.md, The runner): a
suite run as this repository runs its own, ``-n 2 --dist=loadgroup`` with the thread timeout, where one test
ends its worker's process, one outlives the per-test bound and one group loses a worker halfway, ends with
exactly those tests failed and every other test run once."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.long

SUITE = '''
import os
import time

import pytest


@pytest.mark.parametrize("n", range(4))
def test_before(n):
    pass


def test_dies():
    from parity.safety.crash import call_target

    call_target("serving", lambda idx: os._exit(1), 7)


def test_after():
    pass


@pytest.mark.xdist_group("distributed")
def test_group_first():
    pass


@pytest.mark.xdist_group("distributed")
def test_group_dies():
    os._exit(3)


@pytest.mark.xdist_group("distributed")
def test_group_last():
    pass


def test_outlives_the_bound():
    time.sleep(120)
'''


def test_a_suite_with_dead_workers_ends_with_those_tests_failed(tmp_path):
    (tmp_path / "test_planted.py").write_text(SUITE)
    (tmp_path / "pytest.ini").write_text(textwrap.dedent("""\
        [pytest]
        parity_suite = true
        addopts = --dist=loadgroup -p no:cacheprovider
    """))
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "2", "--timeout", "5", "-rf"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )
    output = run.stdout + run.stderr
    assert run.returncode == 1, output
    failed = sorted(re.findall(r"^FAILED test_planted.py::(\w+)", output, re.MULTILINE))
    assert failed == ["test_dies", "test_group_dies", "test_outlives_the_bound"], output
    assert re.search(r"\b3 failed, 7 passed\b", output), output
    assert "parity bounds: 5 s a test (--timeout)" in output, output
    # How the worker ended, and in which call of the target (parity.safety.runner).
    assert re.search(r"worker 'gw\d' crashed while running 'test_planted.py::test_dies': the worker exited with "
                     r"status 1; the last target call it started: `<lambda>\(7\)` while serving", output), output
    assert re.search(r"crashed while running 'test_planted.py::test_group_dies(@distributed)?': the worker exited with status 3$",
                     output, re.MULTILINE), output
