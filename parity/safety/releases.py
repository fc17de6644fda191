"""The releases of its dependencies the harness supports, as its own package metadata states them.

``pyproject.toml`` states each range once (transformers in the dependencies, megatron-core in the
``megatron`` extra; docs/install.md, Supported releases). A run under an installed release outside its
range is refused before any work, with one line naming both, instead of judging a trainer under a
gradient-accumulation contract nobody checked, or a dataset whose package was never run here.
"""

from __future__ import annotations

import tomllib
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.version import Version

DISTRIBUTION = "parity-harness"


class UnsupportedRelease(RuntimeError):
    """An installed release outside the range the harness states."""


def _declared() -> list[str]:
    try:
        return metadata.requires(DISTRIBUTION) or []
    except metadata.PackageNotFoundError:  # a source checkout that was never installed
        project = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())["project"]
        return [*project["dependencies"], *(line for extra in project["optional-dependencies"].values() for line in extra)]


def supported(name: str) -> Requirement | None:
    """The harness's requirement on ``name`` (a dependency or an extra's), None if it states none."""
    for line in _declared():
        requirement = Requirement(line)
        if requirement.name == name:
            return requirement
    return None


def installed(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def install_command(name: str) -> str:
    """An install of the supported range that works (the harness itself is not on the registry)."""
    requirement = supported(name)
    return f"pip install '{name}{requirement.specifier if requirement else ''}'"


def check_supported(name: str | None, version: str | None = None) -> None:
    """Raise :class:`UnsupportedRelease` when ``name`` is installed (or ``version`` given) outside its range."""
    requirement = supported(name) if name else None
    version = (version or installed(name)) if requirement else None
    if version is None or Version(version) in requirement.specifier:
        return
    raise UnsupportedRelease(
        f"{name} {version} is installed, but the parity harness supports {name}{requirement.specifier} "
        f"(docs/install.md, Supported releases): {install_command(name)}"
    )


#: What a run names as the releases it ran on (``python -m parity.safety.releases``; tox.ini's envs print it first).
REPORTED = ("transformers", "accelerate", "huggingface_hub", "torch", "megatron-core", "trl")


def ran_on() -> str:
    return "ran on " + ", ".join(f"{name} {installed(name)}" for name in REPORTED if installed(name))


if __name__ == "__main__":
    print(ran_on())


#: TRL's ``SFTTrainer`` modes (docs/causal-lm.md, TRL), each a target of its own.
TRL_MODES = ("completion-only", "padding-free", "packing")

#: What transformers' own ``Trainer`` gets wrong about a causal LM's window, by release (docs/causal-lm.md, Trainers
#: and their contract per release): the releases each defect spans, the defect, and which of TRL's ``SFTTrainer``
#: modes inherit it (measured with TRL 1.16.0 on 5.5.0 and 5.9.0). Every mode leaves the scaling to the Trainer, so
#: each inherits accelerate's second division; the count before the shift only where TRL's collator serves a row's
#: first label as the row has it (completion-only, padded): padding-free and packing serve each sequence's first
#: label -100 (trl/trainer/sft_trainer.py:208), so the count before the shift is the count after it there.
TRANSFORMERS_TRAINER_DEFECTS = (
    ("<5.5.4", "the window's loss divided again by the accumulation steps in accelerate's backward (5.5.0 to 5.5.3)",
     TRL_MODES),
    ("<5.10", "the window's count taken before the shift, the first label of each row counted (5.5.0 to 5.9.0)",
     ("completion-only",)),
)


def transformers_trainer_defects(version: str | None = None, trl_mode: str | None = None) -> tuple[str, ...]:
    """The defects of the installed transformers' ``Trainer`` (read from package metadata: nothing imported); with
    ``trl_mode``, those TRL's ``SFTTrainer`` inherits in that mode (one of :data:`TRL_MODES`)."""
    from packaging.specifiers import SpecifierSet

    if trl_mode is not None and trl_mode not in TRL_MODES:
        raise ValueError(f"trl_mode: {trl_mode!r} is none of {', '.join(TRL_MODES)}")
    version = version or installed("transformers")
    return () if version is None else tuple(defect for spans, defect, modes in TRANSFORMERS_TRAINER_DEFECTS
                                            if version in SpecifierSet(spans) and (trl_mode is None or trl_mode in modes))
