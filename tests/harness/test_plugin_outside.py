"""From another repository: a package that registers a target runs the suite with the plugin command.

The package is built in a temporary folder and installed into a folder of its own (``pip install
--parity-target``), then ``pytest --pyargs parity.suite --parity-target NAME`` runs from a directory that holds
no file of this repository: the suite, its fixtures and options come from the installed harness.
Each run is a fresh interpreter (about 15 s), so both are ``long`` (conftest.py); the default run's
check of the plugin from another project is tests/harness/test_plugin_inert.py.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

PYPROJECT = """
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "outside-pkg"
version = "0.0.1"

[project.entry-points."parity.targets"]
outside-good = "outside_pkg.adapter:GOOD"
outside-leaky = "outside_pkg.adapter:LEAKY"
outside-hangs = "outside_pkg.adapter:HANGS"

[tool.setuptools]
packages = ["outside_pkg"]
"""

ADAPTER = '''
"""Stands in for a package's own production datasets: one correct, one with the cache leak, one that hangs."""
import time

from parity.dataset.impl import cache_alias_dataset, impl_dataset
from parity.targets import Target

def good_dataset(documents, config):
    return impl_dataset(documents, config)

def leaky_dataset(documents, config):
    return cache_alias_dataset(documents, config)

class Hangs:
    def __init__(self, served):
        self.served, self.document_index, self.shuffle_index = served, served.document_index, served.shuffle_index

    def __len__(self):
        return len(self.served)

    def __getitem__(self, idx):
        if idx == 2:
            time.sleep(3600)
        return self.served[idx]

def hanging_dataset(documents, config):
    return Hangs(impl_dataset(documents, config))

GOOD = Target(name="outside-good", description="correct cache", expect="pass", dataset="outside_pkg.adapter:good_dataset")
LEAKY = Target(name="outside-leaky", description="leaky cache", expect="fail", dataset="outside_pkg.adapter:leaky_dataset")
HANGS = Target(name="outside-hangs", description="hangs", expect="pass", dataset="outside_pkg.adapter:hanging_dataset")
'''


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    source = tmp_path_factory.mktemp("outside-src")
    (source / "pyproject.toml").write_text(PYPROJECT)
    (source / "outside_pkg").mkdir()
    (source / "outside_pkg" / "__init__.py").write_text("")
    (source / "outside_pkg" / "adapter.py").write_text(textwrap.dedent(ADAPTER))
    site = tmp_path_factory.mktemp("outside-site")
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
         "--target", str(site), str(source)],
        check=True, capture_output=True, text=True, timeout=300,
    )
    return site


def run_suite(site: Path, workdir: Path, target: str, **bound: str) -> subprocess.CompletedProcess:
    environment = {**os.environ, "PYTHONPATH": str(site), "HYPOTHESIS_PROFILE": "ci", **bound}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "--pyargs", "parity.suite", "--parity-target", target, "-p", "no:cacheprovider",
         "-k", "test_dataset__matches_oracle"],
        cwd=workdir, env=environment, capture_output=True, text=True, timeout=600,
    )


@pytest.mark.long
def test_an_installed_target_passes_the_suite_from_its_own_directory(installed, tmp_path):
    result = run_suite(installed, tmp_path, "outside-good")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert " passed" in result.stdout and "parity target: outside-good" in result.stdout


@pytest.mark.long
def test_an_installed_leaky_target_fails_it(installed, tmp_path):
    result = run_suite(installed, tmp_path, "outside-leaky")
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr[-3000:]
    assert "loss_mask differs" in result.stdout


@pytest.mark.long
def test_an_installed_target_that_hangs_fails_in_the_users_bound_with_the_hung_call_named(installed, tmp_path):
    """No bound set in the user's repository but $PYTEST_TIMEOUT: the harness's call bound below it ends the hang."""
    result = run_suite(installed, tmp_path, "outside-hangs", PYTEST_TIMEOUT="20")
    output = result.stdout + result.stderr
    assert result.returncode == 1, output[-3000:]
    assert "parity bounds: 20 s a test ($PYTEST_TIMEOUT), 15 s a target call" in output, output[-3000:]
    assert re.search(r"timed out after 15 s in `__getitem__\(2\)` while [^;]*; the hung call's stack:", output), output[-3000:]
    assert "outside_pkg/adapter.py" in output and "+++ Timeout +++" not in output, output[-3000:]
