"""From another repository: a package that registers a target runs the suite with the plugin command.

The package is built in a temporary folder and installed into a folder of its own (``pip install
--parity-target``), then ``pytest --pyargs parity.suite --parity-target NAME`` runs from a directory that holds
no file of this repository: the suite, its fixtures and options come from the installed harness.
Each run is a fresh interpreter (about 15 s), so both are ``long`` (conftest.py); the default run's
check of the plugin from another project is tests/harness/test_plugin_inert.py.
"""

from __future__ import annotations

import os
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

[tool.setuptools]
packages = ["outside_pkg"]
"""

ADAPTER = '''
"""Stands in for a package's own production datasets: one correct, one with the cache leak."""
from parity.dataset.impl import cache_alias_dataset, impl_dataset
from parity.targets import Target

def good_dataset(documents, config):
    return impl_dataset(documents, config)

def leaky_dataset(documents, config):
    return cache_alias_dataset(documents, config)

GOOD = Target(name="outside-good", description="correct cache", expect="pass", dataset="outside_pkg.adapter:good_dataset")
LEAKY = Target(name="outside-leaky", description="leaky cache", expect="fail", dataset="outside_pkg.adapter:leaky_dataset")
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


def run_suite(site: Path, workdir: Path, target: str) -> subprocess.CompletedProcess:
    environment = {**os.environ, "PYTHONPATH": str(site), "HYPOTHESIS_PROFILE": "ci"}
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
