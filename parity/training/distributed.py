"""Real multi-process runs: ``torch.distributed`` over Gloo on CPU (NCCL on GPUs).

Two ways in, one worker entry point. ``launch`` starts ``world_size`` local processes that meet
through a ``FileStore`` in a fresh temporary directory (no port to race for under ``pytest -n
auto``); ``torchrun`` sets the usual environment and the worker joins through ``env://``. Every
wait has a timeout, a rank that dies takes the others down with it, and its error is reported.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

import torch
import torch.distributed as dist

from parity.devices import backend as device_backend

STORE_ENV = "PARITY_FILESTORE"
INIT_TIMEOUT = timedelta(seconds=60)


class RankFailed(RuntimeError):
    """A worker process exited with an error, or the run outlived its timeout."""


def init_process_group(device: str = "cpu") -> None:
    """Join the group this process was launched into: ``launch``'s FileStore, or torchrun's env://.

    Gloo for CPU tensors, NCCL (one GPU per local rank) for CUDA tensors.
    """
    backend = device_backend(device)
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    rank, world_size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    if backend == "nccl":
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)))
    if STORE_ENV in os.environ:
        store = dist.FileStore(os.environ[STORE_ENV], world_size)
        dist.init_process_group(backend, store=store, rank=rank, world_size=world_size, timeout=INIT_TIMEOUT)
    else:
        dist.init_process_group(backend, timeout=INIT_TIMEOUT)


def launch(module: str, args: list[str], world_size: int, timeout_s: float = 300.0) -> list[str]:
    """Run ``python -m module *args`` as ``world_size`` ranks; return each rank's stdout.

    Raises ``RankFailed`` naming the first rank that failed (with the tail of its stderr), after
    terminating the rest, or when the run takes longer than ``timeout_s``.
    """
    with tempfile.TemporaryDirectory(prefix="parity-ddp-") as workdir:
        base_env = {
            **os.environ,
            STORE_ENV: str(Path(workdir) / "store"),
            "WORLD_SIZE": str(world_size),
            "LOCAL_WORLD_SIZE": str(world_size),
            "GLOO_SOCKET_IFNAME": "lo",
            "OMP_NUM_THREADS": "1",
            "PYTHONUNBUFFERED": "1",
        }
        logs = [(Path(workdir) / f"rank{r}.out", Path(workdir) / f"rank{r}.err") for r in range(world_size)]
        processes = []
        for rank, (out, err) in enumerate(logs):
            env = {**base_env, "RANK": str(rank), "LOCAL_RANK": str(rank)}
            with out.open("w") as stdout, err.open("w") as stderr:
                processes.append(
                    subprocess.Popen([sys.executable, "-m", module, *args], env=env, stdout=stdout, stderr=stderr)
                )
        try:
            _wait(processes, logs, timeout_s)
        finally:
            for process in processes:
                if process.poll() is None:
                    process.kill()
                    process.wait()
        return [out.read_text() for out, _ in logs]


def _wait(processes: list[subprocess.Popen], logs, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while any(process.poll() is None for process in processes):
        for rank, process in enumerate(processes):
            if process.poll() not in (None, 0):
                raise RankFailed(f"rank {rank} exited with status {process.returncode}:\n{_tail(logs[rank][1])}")
        if time.monotonic() > deadline:
            raise RankFailed(f"the {len(processes)}-rank run did not finish within {timeout_s:.0f} s")
        time.sleep(0.05)
    for rank, process in enumerate(processes):
        if process.returncode != 0:
            raise RankFailed(f"rank {rank} exited with status {process.returncode}:\n{_tail(logs[rank][1])}")


def _tail(path: Path, lines: int = 30) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
