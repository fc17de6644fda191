"""accelerate's float16 loss scaling on the CPU, so a CPU machine runs what CUDA runs (docs/budget.md, float16).

accelerate applies ``TrainingArguments(fp16=True)`` (float16 autocast and a dynamic ``GradScaler``)
only on GPUs; on the CPU it silently trains in float32, which is why the harness refuses float16
there (``parity.devices.check_dtype_runs_on``). torch itself has both on the CPU, so inside
:func:`cpu_loss_scaling` the accelerator is given what it would set up on CUDA (the same autocast
context, ``GradScaler`` with its default scale and growth) and the harness counts the CPU among the
loss-scaling devices. The harness's tests and the report's ``float16`` scenario run float16 on the CPU so
(:func:`loss_scaled`); the real path runs on a GPU (``tox -e cuda``, the nightly job).
"""

from __future__ import annotations

import contextlib
import functools
from unittest import mock

import torch
from accelerate import Accelerator

import parity.devices


@contextlib.contextmanager
def cpu_loss_scaling():
    """Inside: ``fp16=True`` on the CPU autocasts to float16 and scales the loss, as on CUDA."""
    original = Accelerator.__init__

    @functools.wraps(original)
    def init(self, *args, **kwargs):
        original(self, *args, **kwargs)
        if self.state.mixed_precision == "fp16" and self.device.type == "cpu":
            self.native_amp = True
            self.scaler = torch.amp.GradScaler("cpu")

    with (
        mock.patch.object(Accelerator, "__init__", init),
        mock.patch.object(parity.devices, "LOSS_SCALING_DEVICES", (*parity.devices.LOSS_SCALING_DEVICES, "cpu")),
    ):
        yield


def loss_scaled(device: str) -> contextlib.AbstractContextManager:
    """Where ``TrainingArguments(fp16=True)`` scales the loss on ``device``: accelerate's own on a loss-scaling
    device, :func:`cpu_loss_scaling` on the CPU."""
    return contextlib.nullcontext() if device in parity.devices.LOSS_SCALING_DEVICES else cpu_loss_scaling()
