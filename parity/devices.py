"""The device matrix: the CPU always, CUDA when present, with the determinism settings of docs/budget.md."""

from __future__ import annotations

import os

import torch

DEVICES = ("cpu", "cuda")


def cuda_available() -> bool:
    return torch.cuda.is_available()


def make_deterministic(device: str) -> None:
    """TF32 off and deterministic kernels, so CUDA is held to the same budget as the CPU."""
    if device != "cuda":
        return
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
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
