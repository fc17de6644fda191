"""No process the harness starts outlives the one that started it (docs/faults.md, Ranks, DataLoader workers).

A child stuck in target code never reaches the checks by which torch's DataLoader workers or a rank
would notice that their parent is gone, and nothing runs in a parent that is killed: only the kernel's
parent-death signal (``PR_SET_PDEATHSIG``, Linux) ends such a child. Standard library only, since a rank
arms it before torch is imported.
"""

from __future__ import annotations

import ctypes
import functools
import os
import signal
import sys

_PR_SET_PDEATHSIG = 1


def die_with_parent(parent: int) -> None:
    """The kernel kills this process when ``parent`` (its parent now) dies (Linux; elsewhere a no-op)."""
    if not sys.platform.startswith("linux"):
        return
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the parent died before the signal was armed
        os._exit(1)


def _worker_dies_with(parent: int, worker_id: int) -> None:
    die_with_parent(parent)


def dataloader_workers_die_with_this_process() -> functools.partial:
    """A DataLoader ``worker_init_fn``: each worker dies with the process that builds the loader, even while it
    hangs in the target's ``__getitem__`` (torch's own watchdog looks for the parent only between fetches)."""
    return functools.partial(_worker_dies_with, os.getpid())
