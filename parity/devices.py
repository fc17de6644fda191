"""The one place for devices, working dtypes and process-group backends.

The CPU always, CUDA when present, with the determinism settings of docs/budget.md. torch is
imported inside the functions, so the names can be read (by the property table, the CLI) cheaply.
"""

from __future__ import annotations

import os

DEVICES = ("cpu", "cuda")
#: The working dtypes every device runs, by name (the golden is always float64 on the CPU).
#: bfloat16 is what production trains in (docs/budget.md, bfloat16).
DTYPES = ("float32", "float64", "bfloat16")
#: float16 is trained only as ``TrainingArguments(fp16=True)``: autocast over float32 weights, with
#: accelerate's dynamic loss scaling, which accelerate applies on these devices only. Elsewhere
#: ``fp16=True`` silently trains in float32 (docs/budget.md, float16).
LOSS_SCALING_DEVICES = ("cuda",)
#: Every working dtype a Trainer run may be asked for: ``DTYPES`` and float16 under loss scaling.
TRAINER_DTYPES = (*DTYPES, "float16")
#: The next lower working dtype: its budget tells lower-precision arithmetic inside a run (a
#: ``precision`` finding) from a wrong quantity. bfloat16 and float16 have none: higher precision
#: inside them is fine.
LOWER_DTYPE = {"float64": "float32", "float32": "bfloat16"}


def torch_dtype(name: str):
    """``"float32"`` -> ``torch.float32``; a ValueError naming the allowed values otherwise."""
    import torch

    if name not in TRAINER_DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(TRAINER_DTYPES)}; got {name!r}")
    return getattr(torch, name)


def runs_on(dtype: str, device: str) -> bool:
    """Whether ``device`` runs the working dtype ``dtype`` (float16 needs the Trainer's loss scaling)."""
    return dtype in DTYPES or (dtype == "float16" and device in LOSS_SCALING_DEVICES)


def check_dtype_runs_on(dtype: str, device: str) -> None:
    """A ValueError naming the device and the alternatives when ``device`` cannot run ``dtype``."""
    torch_dtype(dtype)
    if not runs_on(dtype, device):
        raise ValueError(
            f"dtype {dtype!r} is trained only under TrainingArguments(fp16=True), whose loss scaling accelerate "
            f"applies on {', '.join(LOSS_SCALING_DEVICES)} only; on {device!r}, fp16=True would silently train in "
            f"float32. On {device!r} use one of {', '.join(DTYPES)} (bfloat16 for production's precision), "
            f"or float16 with --device {LOSS_SCALING_DEVICES[0]}"
        )


def backend(device: str) -> str:
    """The ``torch.distributed`` backend for a device: Gloo on the CPU, NCCL on GPUs."""
    return "nccl" if device == "cuda" else "gloo"


def cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()


def ranks_fit(device: str, world_size: int) -> bool:
    """Whether ``world_size`` ranks fit this machine without sharing: a CPU core each (Gloo), a GPU each (NCCL)."""
    import os

    if device != "cuda":
        return (os.cpu_count() or 1) >= world_size
    import torch

    return torch.cuda.device_count() >= world_size


def check_ranks_fit(device: str, world_size: int) -> None:
    """NCCL puts one GPU under each rank: a ValueError naming the count when the machine has fewer."""
    if device != "cuda":
        return
    import torch

    count = torch.cuda.device_count()
    if count < world_size:
        raise ValueError(f"{world_size} ranks over NCCL need {world_size} GPUs; this machine has {count}")


def make_deterministic(device: str) -> None:
    """TF32 off and deterministic kernels, so CUDA is held to the same budget as the CPU."""
    if device != "cuda":
        return
    import torch

    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    # bfloat16 and float16 matmuls reduce in their own precision unless told not to.
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
    torch.use_deterministic_algorithms(True)


def resolve_device(name: str) -> str:
    """``cpu``, ``cuda`` or ``auto``; a ValueError naming the allowed values otherwise."""
    if name == "auto":
        return "cuda" if cuda_available() else "cpu"
    if name not in DEVICES:
        raise ValueError(f"device must be one of cpu, cuda, auto; got {name!r}")
    if name == "cuda" and not cuda_available():
        raise ValueError("device 'cuda' was asked for, but torch sees no CUDA device on this machine")
    return name
