"""The transformers releases the Trainer integration supports, read from this package's own metadata.

``pyproject.toml`` states the range once; importing ``impl.trainer`` under another release fails
with a message naming both, instead of training with a gradient-accumulation contract that differs.
"""

from __future__ import annotations

import tomllib
from importlib import metadata
from pathlib import Path

import transformers
from packaging.requirements import Requirement
from packaging.version import Version

DISTRIBUTION = "parity-harness"


def supported_transformers() -> Requirement:
    try:
        requirements = metadata.requires(DISTRIBUTION) or []
    except metadata.PackageNotFoundError:  # a source checkout that was never installed
        pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
        requirements = tomllib.loads(pyproject.read_text())["project"]["dependencies"]
    for line in requirements:
        requirement = Requirement(line)
        if requirement.name == "transformers" and not requirement.marker:
            return requirement
    raise LookupError(f"{DISTRIBUTION} states no transformers requirement")


def check_transformers_version(installed: str = transformers.__version__) -> None:
    requirement = supported_transformers()
    if Version(installed) not in requirement.specifier:
        raise ImportError(
            f"transformers {installed} is installed, but the parity harness's Trainer integration supports "
            f"transformers{requirement.specifier} (the Trainer's gradient-accumulation contract, docs/trainer.md); "
            f"install a supported release, e.g. pip install 'transformers{requirement.specifier}'"
        )
