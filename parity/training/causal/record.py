"""What a causal-LM run is judged on: the case it ran, and per rank what it trained on and did (docs/causal-lm.md).

Every driver (a ``transformers.Trainer``, TRL's ``SFTTrainer``, megatron-core's schedule, a loop of the user's)
produces one :class:`CausalRecord` per rank: the rows of each microbatch of each window, as the oracle reads them
(documents of ids and aligned labels, the shift not yet applied), and after each optimizer step the logged loss,
the gradients the step used and the parameters after it. The verdict needs nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from oracle.causal_lm import Row
from oracle.window_reference import StepResult
from parity.cases import CausalCase
from parity.compare import Finding

__all__ = ["CausalCase", "CausalRecord", "step_windows"]


@dataclass
class CausalRecord:
    """One rank's run: ``windows[k][g]`` the rows of microbatch ``g`` of window ``k``; ``steps[k]`` after step ``k``."""

    windows: list[list[list[Row]]]
    steps: list[StepResult]
    findings: list[Finding] = field(default_factory=list)
    #: what the driver had to change to run here (e.g. megatron's CUDA-only lines patched for the CPU), said in the verdict
    patched: list[str] = field(default_factory=list)


def step_windows(records: list[CausalRecord]) -> list[list[list[list[Row]]]]:
    """``windows[k][r][g]``: step k's microbatches on rank r, as every rank's record holds them."""
    return [[record.windows[k] for record in records] for k in range(len(records[0].windows))]
