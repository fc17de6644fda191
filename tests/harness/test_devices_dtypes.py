"""Working dtypes per device, and a two-rank NCCL run refused where the GPUs are too few (parity.devices)."""

from __future__ import annotations

from unittest import mock

import pytest
import torch

from parity.devices import (
    DTYPES,
    LOWER_DTYPE,
    TRAINER_DTYPES,
    check_dtype_runs_on,
    check_ranks_fit,
    runs_on,
    torch_dtype,
)


def test_bfloat16_is_a_working_dtype_with_nothing_lower():
    assert "bfloat16" in DTYPES and torch_dtype("bfloat16") is torch.bfloat16
    assert LOWER_DTYPE == {"float64": "float32", "float32": "bfloat16"}


def test_float16_is_a_trainer_dtype_only_where_the_trainer_scales_the_loss():
    assert TRAINER_DTYPES == (*DTYPES, "float16") and torch_dtype("float16") is torch.float16
    assert runs_on("float16", "cuda") and not runs_on("float16", "cpu")
    assert all(runs_on(dtype, device) for dtype in DTYPES for device in ("cpu", "cuda"))


def test_float16_on_the_cpu_is_refused_naming_the_device_and_the_alternatives():
    check_dtype_runs_on("float16", "cuda")
    with pytest.raises(ValueError) as refused:
        check_dtype_runs_on("float16", "cpu")
    assert "on 'cpu', fp16=True would silently train in float32" in str(refused.value)
    assert "use one of float32, float64, bfloat16" in str(refused.value) and "--device cuda" in str(refused.value)
    with pytest.raises(ValueError, match="dtype must be one of float32, float64, bfloat16, float16; got 'float8'"):
        check_dtype_runs_on("float8", "cuda")


def test_two_nccl_ranks_on_one_gpu_are_refused_naming_the_count():
    check_ranks_fit("cpu", 2)  # Gloo: any number of ranks
    with (
        mock.patch.object(torch.cuda, "device_count", return_value=1),
        pytest.raises(ValueError, match="2 ranks over NCCL need 2 GPUs; this machine has 1"),
    ):
        check_ranks_fit("cuda", 2)
