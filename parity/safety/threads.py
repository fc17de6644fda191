"""How the harness's processes spend the CPU (docs/design.md, Test-suite practice).

An OpenMP team that spins while it waits burns the cores a busy CI runner has already lost: with
one other CPU-bound process on 2 cores, a tiny-model forward/backward loop on 2 torch threads took
8.9 s spinning against 0.39 s waiting passively (0.23 s on one thread). So every entry point asks
for passive waiting before torch is imported, and each pytest worker takes its share of the cores.

And a process that runs many ``Trainer.train()`` calls freezes its heap once it has imported what it
needs (:func:`freeze_heap`).
"""

from __future__ import annotations

import gc
import os


def wait_passively() -> None:
    """Must run before ``import torch`` (libgomp reads it when loaded); a user's own setting wins."""
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def share_cores(workers: int) -> None:
    """``cores / workers`` torch threads, at least one, so xdist workers do not oversubscribe."""
    import torch

    torch.set_num_threads(max(1, (os.cpu_count() or 1) // max(1, workers)))


def freeze_heap() -> None:
    """Leave every object alive now out of later garbage collections (``gc.freeze``).

    ``Trainer.train()`` ends with accelerate's ``free_memory()``, a full ``gc.collect()`` that walks
    every tracked object: after torch, transformers and the suite are imported, 0.32 s of a tiny
    run's 0.45 s on this project's 2-core machine (0.13 s frozen). What exists once the imports and
    the collection are done (modules, classes, test items) lives as long as the process anyway.
    Called by the pytest plugin after collection, and by the entry points that run many trainers.
    """
    gc.collect()
    gc.freeze()
