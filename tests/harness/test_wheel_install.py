"""Installation as it really is (docs/install.md): the wheel built from this tree installs, with its
``test`` and ``megatron`` extras, into a fresh virtual environment, and the installed harness runs there
from a folder that holds no file of this repository. Slow (a fresh environment from the index): ``long``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parents[2]

#: A fresh environment installs transformers, matplotlib, Hypothesis ... from the index: minutes, not the 300 s default.
pytestmark = [pytest.mark.long, pytest.mark.timeout(1800)]


def run(*command: str, cwd: Path | None = None, timeout: int = 1500) -> str:
    environment = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "VIRTUAL_ENV")}
    result = subprocess.run(command, cwd=cwd, env=environment, capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, f"{' '.join(command)}\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result.stdout


def test_the_built_wheel_installs_with_its_extras_into_a_fresh_environment(tmp_path):
    source = tmp_path / "source"  # built from a copy: setuptools writes build/ and *.egg-info beside the sources
    shutil.copytree(REPOSITORY, source, ignore=shutil.ignore_patterns(".*", "build", "dist", "*.egg-info", "__pycache__"))
    run(sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "-w", str(tmp_path / "dist"),
        str(source))
    (wheel,) = (tmp_path / "dist").glob("parity_harness-*.whl")
    run(sys.executable, "-m", "venv", str(tmp_path / "env"))
    python = str(tmp_path / "env" / "bin" / "python")
    import torch

    # The machine's torch first (docs/install.md), so that the extras never pull another build.
    run(python, "-m", "pip", "install", "--quiet", f"torch=={torch.__version__.split('+')[0]}")
    run(python, "-m", "pip", "install", "--quiet", f"{wheel}[test,megatron]")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert "megatron-core:fixed" in run(python, "-m", "parity", "targets", cwd=elsewhere)
    suite = run(python, "-m", "pytest", "--pyargs", "parity.suite", "--parity-target", "impl", "-p", "no:cacheprovider",
                "-q", "-k", "dataset__matches_oracle", cwd=elsewhere)
    assert " passed" in suite
