"""bfloat16 as a working dtype, and a two-rank NCCL run refused where the GPUs are too few (parity.devices)."""

from __future__ import annotations

from unittest import mock

import pytest
import torch

from parity.devices import DTYPES, LOWER_DTYPE, check_ranks_fit, torch_dtype


def test_bfloat16_is_a_working_dtype_with_nothing_lower():
    assert "bfloat16" in DTYPES and torch_dtype("bfloat16") is torch.bfloat16
    assert LOWER_DTYPE == {"float64": "float32", "float32": "bfloat16"}


def test_two_nccl_ranks_on_one_gpu_are_refused_naming_the_count():
    check_ranks_fit("cpu", 2)  # Gloo: any number of ranks
    with (
        mock.patch.object(torch.cuda, "device_count", return_value=1),
        pytest.raises(ValueError, match="2 ranks over NCCL need 2 GPUs; this machine has 1"),
    ):
        check_ranks_fit("cuda", 2)
