"""How the harness's processes share the CPU (docs/design.md, Test-suite practice).

An OpenMP team that spins while it waits burns the cores a busy CI runner has already lost: with
one other CPU-bound process on 2 cores, a tiny-model forward/backward loop on 2 torch threads took
8.9 s spinning against 0.39 s waiting passively (0.23 s on one thread). So every entry point asks
for passive waiting before torch is imported, and each pytest worker takes its share of the cores.
"""

from __future__ import annotations

import os


def wait_passively() -> None:
    """Must run before ``import torch`` (libgomp reads it when loaded); a user's own setting wins."""
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def share_cores(workers: int) -> None:
    """``cores / workers`` torch threads, at least one, so xdist workers do not oversubscribe."""
    import torch

    torch.set_num_threads(max(1, (os.cpu_count() or 1) // max(1, workers)))
