"""The case types: what a property draws and a run drives, as plain values (docs/design.md, Layout).

Strategies draw these, properties check them and runs drive targets with them, so this module
imports neither strategies nor runs: a property that needs a case's type never pulls in Hypothesis
strategies or a training loop. A case is built deterministically from a few numbers (no downloads):
the tensors of a ``WindowCase`` come from its seeds, a ``DatasetCase`` holds its documents.

The space a ``TrainerCase`` is drawn from is declared here once, :func:`draw_trainer_case`, and
read by both samplers: the suite's Hypothesis strategy (``parity.strategies.training``) and the
two-rank sampler (``parity.training.diffusion.drivers.ranks``), each through its own :class:`Draws`.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field, replace

import numpy as np
import torch

from oracle.blend_reference import split_documents
from oracle.gpt_indices import num_epochs as oracle_num_epochs
from oracle.gpt_indices import sample_count
from oracle.nemotron_diffusion import IGNORE_INDEX, TINY_CONFIG
from parity.dataset_config import GPTDatasetConfig
from parity.devices import DEVICES, DTYPES, torch_dtype

#: The dtypes a Trainer autocasts to over float32 weights (``bf16=True``, ``fp16=True``).
AUTOCAST_DTYPES = ("bfloat16", "float16")

# --- dataset -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DatasetCase:
    """One dataset and the order its first samples are served in, on a fresh instance.

    ``serve_order`` holds shuffle positions (``dataset[k]``) and ``None`` (a batch-padding sample);
    with ``last_sample_first`` the position that serves the stream's last sample is served before it.
    """

    documents: tuple[np.ndarray, ...]
    config: GPTDatasetConfig
    serve_order: tuple[int | None, ...] = ()
    last_sample_first: bool = False
    #: Served from ``.bin``/``.idx`` files to a target that reads them (docs/dataset.md, Files).
    on_disk: bool = False

    @property
    def length(self) -> int:
        """How many samples the dataset must hold, from the oracle's formulas."""
        return samples_supplied(self.config, tokens_per_epoch(self.documents))


def tokens_per_epoch(documents) -> int:
    return sum(len(document) for document in documents)


def samples_supplied(config, tokens: int) -> int:
    return sample_count(oracle_num_epochs(tokens, config) * tokens, config)


# --- megatron's data pipeline ----------------------------------------------------------------------


@dataclass(frozen=True)
class PipelineCase:
    """megatron-core's data pipeline in miniature (docs/dataset.md, The pipeline).

    ``prefixes`` holds the documents of each prefix (written to ``.bin``/``.idx`` files when a check
    runs); ``weights`` the blend's, one per prefix (None: a single prefix, no blend); ``split`` the
    split string (``"969,30,1"``; None: every split from the whole of each prefix, megatron's
    ``blend_per_split``); ``sizes`` the samples wanted for train, valid and test; ``config`` the
    sample settings, whose ``split`` and ``num_samples`` the pipeline sets per split.
    """

    prefixes: tuple[tuple[np.ndarray, ...], ...]
    weights: tuple[float, ...] | None
    split: str | None
    sizes: tuple[int, int, int]
    config: GPTDatasetConfig

    def __post_init__(self) -> None:
        problem = pipeline_problem(self.prefixes, self.weights, self.split, self.sizes, self.config)
        if problem:
            raise ValueError(problem)

    def reference_arguments(self) -> tuple:
        """What :func:`oracle.gpt_pipeline.oracle_splits` takes: the drawn documents, never the files."""
        return self.prefixes, self.weights, self.split, self.sizes, self.config


def pipeline_problem(prefixes, weights, split, sizes, config) -> str | None:
    """Why ``case`` is not a pipeline megatron can build (the field and what it allows), or None.

    megatron loops forever over a split whose documents hold no token, so every split the split
    string keeps must get at least one document, of at least one token, from every prefix."""
    if not 1 <= len(prefixes) < 32767:
        return f"prefixes must hold 1 to 32766 prefixes, got {len(prefixes)}"
    if weights is None and len(prefixes) > 1:
        return f"weights must be given for a blend of {len(prefixes)} prefixes"
    if weights is not None and (len(weights) != len(prefixes) or not all(w > 0 for w in weights)):
        return f"weights must be one positive number per prefix ({len(prefixes)}), got {weights}"
    if len(sizes) != 3 or not all(isinstance(size, int) and size >= 1 for size in sizes):
        return f"sizes must be three integers >= 1 (train, valid, test), got {sizes}"
    if split is not None and not re.fullmatch(r"\d+(\.\d+)?(,\d+(\.\d+)?){0,2}", split):
        return f"split must be one to three comma-separated weights such as '969,30,1', got {split!r}"
    if split is not None and not any(float(part) for part in split.split(",")):
        return f"split must give some split a weight above 0, got {split!r}"
    if config.num_samples is not None or config.num_epochs is not None:
        return "config.num_samples and config.num_epochs must be None: a pipeline's sizes say what each split serves"
    for number, documents in enumerate(prefixes):
        for name, kept in zip(("train", "valid", "test"), split_documents(split, len(documents))):
            if kept is not None and not sum(len(documents[d]) for d in kept):
                return f"split {split!r} gives {name} no token of the {len(documents)} documents of prefixes[{number}]"
    return None


# --- masked-diffusion training windows -----------------------------------------------------------

VOCAB = TINY_CONFIG["vocab_size"]
MASK_TOKEN_ID = TINY_CONFIG["mask_token_id"]
#: The tiny model's EOS id, which the EOS-padding rule writes into padding.
EOS = TINY_CONFIG["eos_token_id"]

#: The published noising's ``eps`` (docs/diffusion-model.md, Noising); what an undeclared trainer runs at.
PUBLISHED_EPS = 1e-3
#: The eps of the float16 runs that name a scenario (the report's, the explicit example): at p = 1 the
#: first steps' scaled gradients fit float16 at the scaler's initial 2^16 and are judged; at the
#: published eps every step overflows and is skipped (docs/budget.md, float16).
LOSS_SCALED_EPS = 1.0
#: Row kinds: a response (prompt + answer + padding), all prompt (nothing to supervise), no padding.
ROW_KINDS = ("answer", "prompt-only", "full")


@dataclass(frozen=True)
class WindowCase:
    """A training run in miniature: windows of right-padded prompt/answer microbatches, the noise
    settings, the dtype and the model."""

    window_sizes: tuple[int, ...]
    rows_per_microbatch: int
    length: int
    batch_kinds: tuple[tuple[str, ...], ...]  # per microbatch, per row
    with_labels: bool
    with_attention_mask: bool
    data_seed: int
    noise_seed: int
    eps: float
    dtype: torch.dtype
    frozen_head: bool
    model_seed: int = 0
    lr: float = 0.01
    windows: list = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        problem = window_problem(self)
        if problem:
            raise ValueError(problem)
        object.__setattr__(self, "windows", build_windows(self))


def window_problem(case: WindowCase) -> str | None:
    """Why ``case`` is not a window case (the field and what it allows), or None: its microbatches are the
    windows' (``sum(window_sizes)``), each of ``rows_per_microbatch`` rows of a kind of :data:`ROW_KINDS`."""
    if not case.window_sizes or not all(size >= 1 for size in case.window_sizes):
        return f"window_sizes must be one or more sizes >= 1, got {case.window_sizes}"
    if case.rows_per_microbatch < 1 or case.length < 1:
        return f"rows_per_microbatch and length must be >= 1, got {case.rows_per_microbatch} and {case.length}"
    if len(case.batch_kinds) != sum(case.window_sizes):
        return f"batch_kinds must hold sum(window_sizes) = {sum(case.window_sizes)} microbatches, got {len(case.batch_kinds)}"
    for number, kinds in enumerate(case.batch_kinds):
        if len(kinds) != case.rows_per_microbatch or not set(kinds) <= set(ROW_KINDS):
            return (f"batch_kinds[{number}] must be {case.rows_per_microbatch} row kinds of {', '.join(ROW_KINDS)}, "
                    f"got {kinds}")
    if not 0.0 < case.eps <= 1.0:
        return f"eps must lie in (0, 1], got {case.eps!r}"
    return None


def build_windows(case: WindowCase) -> list[list[dict[str, torch.Tensor]]]:
    generator = torch.Generator().manual_seed(case.data_seed)
    batches = iter([build_microbatch(kinds, case, generator) for kinds in case.batch_kinds])
    return [[next(batches) for _ in range(size)] for size in case.window_sizes]


def build_microbatch(kinds: tuple[str, ...], case: WindowCase, generator: torch.Generator) -> dict[str, torch.Tensor]:
    """Right-padded rows: prompt, then answer, then padding; labels supervise the answer only."""
    ids = torch.randint(0, MASK_TOKEN_ID, (len(kinds), case.length), generator=generator)
    attention = torch.ones_like(ids)
    labels = torch.full_like(ids, IGNORE_INDEX)
    for row, kind in enumerate(kinds):
        prompt, answer = _split(kind, case.length, generator)
        attention[row, prompt + answer :] = 0
        labels[row, prompt : prompt + answer] = ids[row, prompt : prompt + answer]
    batch = {"input_ids": ids}
    if case.with_attention_mask:
        batch["attention_mask"] = attention
    if case.with_labels:
        batch["labels"] = labels
    return batch


def _split(kind: str, length: int, generator: torch.Generator) -> tuple[int, int]:
    """(prompt length, answer length) of a row of ``length`` positions."""
    if kind == "full":
        prompt = int(torch.randint(0, length, (), generator=generator))
        return prompt, length - prompt
    used = int(torch.randint(1, length + 1, (), generator=generator))
    if kind == "prompt-only":
        return used, 0
    prompt = int(torch.randint(0, used, (), generator=generator))
    return prompt, used - prompt


#: The seed pull request's validation (docs/design.md): two equal-length answers (11 tokens), micro-batch 1,
#: accumulation 2; these seeds realize mask counts 7 and 10 (tests/diffusion/test_noise.py checks it).
SEED_SCENARIO = WindowCase(
    window_sizes=(2,),
    rows_per_microbatch=1,
    length=16,
    batch_kinds=(("full",), ("full",)),
    with_labels=True,
    with_attention_mask=True,
    data_seed=26,
    noise_seed=110,
    eps=PUBLISHED_EPS,
    dtype=torch.float32,
    frozen_head=False,
)


# --- whole training runs ----------------------------------------------------------------------------



@dataclass(frozen=True)
class TrainerCase:
    """Everything a whole training run depends on (docs/trainer.md)."""

    examples_per_rank: int = 5
    window_size: int = 2
    max_length: int = 10
    data_seed: int = 0
    #: The Trainer's ``args.seed``: it seeds torch's global generator, which the noise is drawn from.
    noise_seed: int = 1
    #: Rank ``r`` gets ``args.seed = noise_seed + r`` (its noise differs from the other ranks').
    seed_per_rank: bool = False
    model_seed: int = 0
    lr: float = 0.01
    dtype: str = "float32"
    device: str = "cpu"
    average_tokens_across_devices: bool = True
    #: ranks whose rows are all prompt, so their windows realize no mask at all
    empty_ranks: tuple[int, ...] = ()
    evaluate: bool = True
    #: rows per evaluation batch (0: all of a rank's rows in one batch)
    eval_batch_size: int = 0
    #: the noising's ``eps``, given to a trainer that declares a class attribute ``eps``
    eps: float = PUBLISHED_EPS
    #: rows per training microbatch (``per_device_train_batch_size``): above 1, a microbatch holds
    #: padding, and rows with and without an answer side by side (``prompt_only_rows``)
    train_batch_size: int = 1
    #: rows (by index over every rank's rows) that are all prompt: nothing to supervise, no EOS padding
    prompt_only_rows: tuple[int, ...] = ()
    #: bfloat16 or float16 as production runs it with ``TrainingArguments(bf16=True)`` or
    #: ``(fp16=True)``: autocast over float32 weights (False: the weights themselves in ``dtype``).
    #: Judged against the oracle in ``dtype``. float16 is autocast only: its loss scaling is the
    #: Trainer's (a device without it refuses the run, ``parity.devices.check_dtype_runs_on``).
    autocast: bool = False

    def __post_init__(self):
        if self.device not in DEVICES:
            raise ValueError(f"device must be one of cpu, cuda; got {self.device!r}")
        torch_dtype(self.dtype)  # a ValueError naming the allowed values
        if self.examples_per_rank < 1 or self.window_size < 1 or self.train_batch_size < 1 or self.max_length < 2:
            raise ValueError("examples_per_rank, window_size and train_batch_size must be >= 1, max_length >= 2")
        if not 0.0 < self.eps <= 1.0:
            raise ValueError(f"eps must lie in (0, 1], got {self.eps!r}")
        if self.autocast and self.dtype not in AUTOCAST_DTYPES:
            raise ValueError(
                f"autocast (TrainingArguments(bf16=True) or (fp16=True)) needs dtype 'bfloat16' or 'float16'; "
                f"got {self.dtype!r}"
            )
        if self.dtype == "float16" and not self.autocast:
            raise ValueError(
                "dtype 'float16' needs autocast=True: float16 is trained as TrainingArguments(fp16=True), autocast "
                "over float32 weights with loss scaling (the Trainer refuses to unscale float16 weights' gradients)"
            )

    @property
    def weights_dtype(self) -> torch.dtype:
        """The dtype the model is built in: float32 master weights under autocast, else the working dtype.
        Every oracle evaluation starts from these weights, cast to its own dtype."""
        return torch.float32 if self.autocast else torch_dtype(self.dtype)

    @property
    def loss_scaled(self) -> bool:
        """Whether the Trainer scales the loss (``fp16=True``): a step may be skipped on overflow."""
        return self.dtype == "float16"

    def rank_of_row(self, row: int, world_size: int) -> int:
        """The rank row ``row`` is served to: accelerate shards whole batches round-robin (the batches
        actually served, not this assumption, are what the oracle replays)."""
        return (row // self.train_batch_size) % world_size

    def rank_seed(self, rank: int) -> int:
        """The ``args.seed`` rank ``rank`` trains with."""
        return self.noise_seed + rank if self.seed_per_rank else self.noise_seed

    def to_json(self) -> dict:
        return asdict(self)


def at_dtype(value, dtype: str):
    """A case in the working dtype ``dtype`` (``bench --dtype``, ``ddp_cases --dtype``); any other value
    as it is. A Trainer case keeps its way where the dtype has two (bfloat16: weights or autocast);
    float16 is autocast only. A window case has no float16: it calls the loss directly, without the
    Trainer's loss scaling (a ValueError naming the dtypes it has)."""
    if isinstance(value, TrainerCase):
        autocast = dtype == "float16" or (dtype == "bfloat16" and value.autocast)
        return replace(value, dtype=dtype, autocast=autocast)
    if isinstance(value, WindowCase):
        if dtype not in DTYPES:
            raise ValueError(f"a window case runs in {', '.join(DTYPES)}; got {dtype!r}")
        return replace(value, dtype=torch_dtype(dtype))
    if isinstance(value, CausalCase) and dtype in CAUSAL_DTYPES:  # float16 has no causal-LM case: as it is
        return replace(value, dtype=dtype)
    return value


#: The working dtypes of a causal-LM case (the weights'; no loss scaling, so no float16).
CAUSAL_DTYPES = ("float32", "float64", "bfloat16")


@dataclass(frozen=True)
class CausalCase:
    """Everything a causal-LM run depends on: the rows are drawn from ``data_seed`` by the case strategies
    (``parity.training.causal.rows``), the model from ``model_seed``."""

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
    #: ranks whose rows are all prompt: they supervise nothing, and the window's count is the other ranks'
    empty_ranks: tuple[int, ...] = ()
    #: microbatches in the last window, fewer than ``window_size`` (a Trainer serves the end of an epoch so); None:
    #: every window full. The window rule divides a partial window by its own count (docs/causal-lm.md, The rows)
    last_window: int | None = None

    def __post_init__(self):
        for name in ("window_size", "steps", "rows_per_microbatch", "world_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)!r}")
        if self.max_length < 3:
            raise ValueError(f"max_length must be >= 3, got {self.max_length!r}")
        if any(not 0 <= rank < self.world_size for rank in self.empty_ranks):
            raise ValueError(f"empty_ranks must be ranks of world_size {self.world_size}, got {self.empty_ranks!r}")
        if self.dtype not in CAUSAL_DTYPES:
            raise ValueError(f"dtype must be one of float32, float64, bfloat16; got {self.dtype!r}")
        if self.last_window is not None and not 1 <= self.last_window < self.window_size:
            raise ValueError(f"last_window must be None or 1 to window_size - 1 = {self.window_size - 1}, "
                             f"got {self.last_window!r}")

    def window_sizes(self) -> list[int]:
        """The microbatches of each of the ``steps`` windows: ``window_size`` each, the last ``last_window``."""
        return [self.window_size] * (self.steps - 1) + [self.last_window or self.window_size]
