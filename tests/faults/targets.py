"""The fault gallery's targets: each a tiny target with one fault, written as a user would write it
(docs/faults.md, The gallery); the tests beside it hold each to the verdict it must get."""

from __future__ import annotations

import ctypes
import os
import time

import torch
import torch.distributed as dist

from impl.logits_trainer import LogitsDiffusionTrainer


def _rank() -> int:
    return dist.get_rank() if dist.is_initialized() else 0


class RaisesOnRankOne(LogitsDiffusionTrainer):
    """Raises in its own loss on rank 1 only, while rank 0 goes on into DDP's all-reduce."""

    def compute_loss(self, model, inputs, *args, **kwargs):
        if _rank() == 1:
            raise ValueError("rank 1's own loss failed")
        return super().compute_loss(model, inputs, *args, **kwargs)


class SleepsOnRankOne(LogitsDiffusionTrainer):
    """Stops answering in its own loss on rank 1 only."""

    def compute_loss(self, model, inputs, *args, **kwargs):
        if _rank() == 1:
            time.sleep(3600)
        return super().compute_loss(model, inputs, *args, **kwargs)


class ExitsOnRankOne(LogitsDiffusionTrainer):
    """Ends its process (``os._exit(3)``) on rank 1 only."""

    def compute_loss(self, model, inputs, *args, **kwargs):
        if _rank() == 1:
            os._exit(3)
        return super().compute_loss(model, inputs, *args, **kwargs)


class SegfaultsOnRankOne(LogitsDiffusionTrainer):
    """Reads address 0 on rank 1 only."""

    def compute_loss(self, model, inputs, *args, **kwargs):
        if _rank() == 1:
            ctypes.string_at(0)
        return super().compute_loss(model, inputs, *args, **kwargs)


class SkipsTheCountOnRankOne(LogitsDiffusionTrainer):
    """Leaves the window's count all-reduce out on rank 1 only: rank 0 waits in it while rank 1 goes on into
    DDP's gradient all-reduce."""

    def window_count(self, device):
        if _rank() == 1:
            return sum(masked.sum() for _, _, masked, _ in self._window_noise).to(device)
        return super().window_count(device)


class ReseedsEveryWindow(LogitsDiffusionTrainer):
    """``torch.manual_seed(args.seed)`` before every window: every window's noise is the first one's."""

    def get_batch_samples(self, *args, **kwargs):
        torch.manual_seed(self.args.seed)
        return super().get_batch_samples(*args, **kwargs)


class DrawsBetweenBatches(LogitsDiffusionTrainer):
    """Draws for a purpose of its own after every micro-batch's step (docs/trainer.md allows it)."""

    def training_step(self, *args, **kwargs):
        loss = super().training_step(*args, **kwargs)
        torch.rand(1)
        return loss


class NanLoss(LogitsDiffusionTrainer):
    """Its loss turns NaN from the second window on."""

    def forward_and_sum(self, model, noisy, targets, masked, p):
        logits, total = super().forward_and_sum(model, noisy, targets, masked, p)
        return logits, total * float("nan") if self.state.global_step >= 1 else total


def hangs_in_a_dataloader_worker(documents, config):
    """A dataset that serves the main process and stops answering in every DataLoader worker."""
    from torch.utils.data import get_worker_info

    from parity.dataset.impl import impl_dataset

    dataset = impl_dataset(documents, config)

    class HangsInAWorker(type(dataset)):
        def __getitem__(self, idx):
            if get_worker_info() is not None:
                print(f"worker {os.getpid()} hangs", flush=True)
                time.sleep(3600)
            return super().__getitem__(idx)

    dataset.__class__ = HangsInAWorker
    return dataset
