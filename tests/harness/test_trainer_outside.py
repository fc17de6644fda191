"""From another directory: a trainer packaged outside the repository, with its own arguments class and
collator, plugs in through an adapter and passes the suite (docs/trainer.md, What a target may bring).

The research trainer of ``tests/training/research_trainer.py`` is copied, unedited, into a package of
its own beside ``ADAPTER`` (the whole adapter), built and installed into a folder of its own, and the
suite runs from a directory that holds no file of this repository (as ``test_plugin_outside.py`` does
for a dataset target).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.harness.test_plugin_outside import PYPROJECT

LIBRARY = Path(__file__).resolve().parents[1] / "training" / "research_trainer.py"

ADAPTER = '''\
"""The research trainer as it ships: its arguments class, its EOS-rule collator, eps only in (0, 1)."""
from outside_pkg.trainer import DiffusionArguments, EosPaddingCollator, ResearchDiffusionTrainer
from parity.trainer_space import EpsDomain
from parity.training.shipped import ShippedTrainer
from parity.targets import Target

TRAINER = ShippedTrainer(
    ResearchDiffusionTrainer,
    arguments=DiffusionArguments,               # its own TrainingArguments subclass
    argument_values={"noise_schedule": "linear"},
    eps_argument="time_epsilon",                # the field it reads its eps from
    collator=EosPaddingCollator,                # called with the tokenizer (the harness's tiny one)
    eps_domain=EpsDomain(high_closed=False),    # it accepts eps in (0, 1)
)
TARGET = Target(name="outside-research", description="a research trainer as it ships", expect="pass",
                trainer="outside_pkg.adapter:TRAINER")
'''


def test_the_adapter_is_short():
    assert len(ADAPTER.splitlines()) <= 25


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    source = tmp_path_factory.mktemp("outside-trainer-src")
    entry_points = 'outside-research = "outside_pkg.adapter:TARGET"'
    pyproject = PYPROJECT.split("[project.entry-points")[0] + f'[project.entry-points."parity.targets"]\n{entry_points}\n' \
        + '\n[tool.setuptools]\npackages = ["outside_pkg"]\n'
    (source / "pyproject.toml").write_text(pyproject)
    (source / "outside_pkg").mkdir()
    (source / "outside_pkg" / "__init__.py").write_text("")
    (source / "outside_pkg" / "trainer.py").write_text(LIBRARY.read_text())
    (source / "outside_pkg" / "adapter.py").write_text(ADAPTER)
    site = tmp_path_factory.mktemp("outside-trainer-site")
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation", "--target", str(site),
         str(source)],
        check=True, capture_output=True, text=True, timeout=300,
    )
    return site


@pytest.mark.long
def test_a_trainer_packaged_outside_passes_the_suite_from_its_own_directory(installed, tmp_path):
    environment = {**os.environ, "PYTHONPATH": str(installed), "HYPOTHESIS_PROFILE": "ci"}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--pyargs", "parity.suite", "--target", "outside-research", "-p", "no:cacheprovider",
         "-k", "training"],
        cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=1200,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert " passed" in result.stdout and "parity target: outside-research" in result.stdout
