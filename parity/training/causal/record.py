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
from parity.compare import Finding


@dataclass(frozen=True)
class CausalCase:
    """Everything a causal-LM run depends on: the rows are drawn from ``data_seed`` by the case strategies
    (``parity.strategies.causal``), the model from ``model_seed``."""

    window_size: int = 2  # microbatches per optimizer step (gradient accumulation steps)
    steps: int = 2
    rows_per_microbatch: int = 2
    max_length: int = 12
    data_seed: int = 0
    model_seed: int = 0
    lr: float = 1.0
    dtype: str = "float32"
    device: str = "cpu"
    world_size: int = 1
    #: every rank's count summed (transformers' ``average_tokens_across_devices=True``) or each rank its own
    average_tokens_across_devices: bool = True
    #: rows of several documents, positions restarting per document
    packed: bool = False

    def __post_init__(self):
        for name in ("window_size", "steps", "rows_per_microbatch", "world_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)!r}")
        if self.max_length < 3:
            raise ValueError(f"max_length must be >= 3, got {self.max_length!r}")
        if self.dtype not in ("float32", "float64", "bfloat16"):
            raise ValueError(f"dtype must be one of float32, float64, bfloat16; got {self.dtype!r}")


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
