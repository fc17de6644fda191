"""What a causal-LM run is judged on: the case it ran, and per rank what it trained on and did (docs/causal-lm.md).

Every driver (a ``transformers.Trainer``, TRL's ``SFTTrainer``, megatron-core's schedule, a loop of the user's)
produces one :class:`CausalRecord` per rank: the rows of each microbatch of each window, as the oracle reads them
(documents of ids and aligned labels, the shift not yet applied), and after each optimizer step the logged loss,
the gradients the step used and the parameters after it. The verdict needs nothing else.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from torch import nn

from oracle.causal_lm import Row, tiny_causal_lm
from oracle.window_reference import StepResult
from parity.cases import CausalCase
from parity.compare import Finding
from parity.devices import torch_dtype
from parity.targets.interfaces import load_attribute

__all__ = ["CausalCase", "CausalRecord", "builder_name", "starting_model", "step_windows"]

#: A model builder: ``(seed, dtype) -> nn.Module``, the same weights from the same seed in every dtype.
ModelBuilder = Callable[[int, torch.dtype], nn.Module]


@dataclass
class CausalRecord:
    """One rank's run: ``windows[k][g]`` the rows of microbatch ``g`` of window ``k``; ``steps[k]`` after step ``k``."""

    windows: list[list[list[Row]]]
    steps: list[StepResult]
    findings: list[Finding] = field(default_factory=list)
    #: what the driver had to change to run here (e.g. megatron's CUDA-only lines patched for the CPU), said in the verdict
    patched: list[str] = field(default_factory=list)
    #: the model the run trained, as ``module:function`` of its builder (:func:`builder_name`); "" for the oracle's tiny
    #: Llama. A name, not the model: records travel between processes as plain data, and the verdict rebuilds it.
    model: str = ""


def builder_name(builder: ModelBuilder) -> str:
    """``module:function`` of a builder the verdict can import again ("" for the oracle's own tiny Llama); a builder
    that cannot be found again by its name (a lambda, a function inside another) is refused here, before any run."""
    if builder is tiny_causal_lm:
        return ""
    name = f"{getattr(builder, '__module__', '')}:{getattr(builder, '__qualname__', '')}"
    if _imported(name) is not builder:
        raise ValueError(f"a model builder must be a function at the top of an importable module, so the verdict can "
                         f"build the starting weights again; got {builder!r} (docs/causal-lm.md, The loop interface)")
    return name


def _imported(name: str):
    """The builder ``name`` names, through the registry's one import of a target's own ``module:attribute``: the name
    comes from the loop the user's target named, read back from the launch's private folder (docs/security.md)."""
    try:
        return load_attribute(name)
    except (ImportError, AttributeError, ValueError):
        return None


def starting_model(case: CausalCase, records: list[CausalRecord], dtype: torch.dtype, device: str) -> nn.Module:
    """The model the run started from, rebuilt from the case's seed in the case's dtype, then in ``dtype`` on
    ``device``: the oracle's tiny Llama, or the model class the target trains (a library's own)."""
    builder = _imported(records[0].model) if records[0].model else tiny_causal_lm
    return builder(case.model_seed, torch_dtype(case.dtype)).to(device, dtype)


def step_windows(records: list[CausalRecord]) -> list[list[list[list[Row]]]]:
    """``windows[k][r][g]``: step k's microbatches on rank r, as every rank's record holds them."""
    return [[record.windows[k] for record in records] for k in range(len(records[0].windows))]
