"""Real multi-process runs: ``torch.distributed`` over Gloo on CPU (NCCL on GPUs).

Two ways in, one worker entry point. ``launch`` starts ``world_size`` local processes that meet
through a ``FileStore`` in a fresh temporary directory (no port to race for under ``pytest -n
auto``); ``torchrun`` sets the usual environment and the worker joins through ``env://``.

Nothing a launch starts outlives it, and every fault ends in a ``RankFailed`` that names it
(docs/faults.md, Ranks). Each rank runs in a process group of its own (with its DataLoader workers),
started by ``parity.training.launch.rank_start``: it dies with the launcher (a parent-death signal), reports
its own error through a file before any further collective, and answers ``SIGUSR1`` with its stacks.
On any way out, an interrupt included, the launcher kills every rank's group and removes its folder,
where the ranks keep their temporary files. A run that outlives its bound (held below the test's,
``parity.safety.bounds``) is asked for every rank's stack first, and the failure names where each rank was
and the collective it waited in.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

import torch
import torch.distributed as dist

from parity.devices import backend as device_backend
from parity.safety.bounds import TEST_BOUND_ENV, call_bound
from parity.safety.crash import TargetCrashedOnRank, process_ended, raised_in, short_path, signature_of
from parity.training.launch.rank_start import ERRORS_ENV, LAUNCHER_ENV

STORE_ENV = "PARITY_FILESTORE"
INIT_TIMEOUT = timedelta(seconds=60)
#: Seconds the ranks get to write their stacks once a run has outlived its bound.
STACK_GRACE_S = 5.0


class RankFailed(RuntimeError):
    """A rank raised, exited or was killed, or the run outlived its bound; the message says which. ``signature``:
    where a rank raised in the target's code, as a target's ``known_crashes`` match it (None for any other failure)."""

    def __init__(self, message: str):
        super().__init__(message)
        first = message.splitlines()[0] if message else ""
        self.signature = signature_of(first.partition(" failed: ")[2]) if _FAILED.match(first) else None

    def as_crash(self) -> TargetCrashedOnRank | None:
        """The target's crash this failure is, when a rank raised in the target's code."""
        return TargetCrashedOnRank(str(self).splitlines()[0], self.signature) if self.signature else None


_FAILED = re.compile(r"rank \d+ failed: ")


class RankCrashed(RuntimeError):
    """Raised on the rank whose target crashed: its message is the crash as the verdict names it, and
    ``rank_start`` hands it to the launcher instead of going on to a collective its peers are not in."""


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


def launch(module: str, args: list[str], world_size: int, timeout_s: float | None = None) -> list[str]:
    """Run ``python -m module *args`` as ``world_size`` ranks; return each rank's stdout.

    The run's bound is ``timeout_s``, held at or below the harness's call bound in a test
    (``parity.safety.bounds.call_bound``). Raises ``RankFailed`` naming the fault (see the module docstring)
    after killing every rank's process group, as on any other way out.
    """
    bound = call_bound() if timeout_s is None else timeout_s
    if os.environ.get(TEST_BOUND_ENV) and call_bound() is not None:
        bound = min(bound or float("inf"), call_bound())
    with tempfile.TemporaryDirectory(prefix="parity-ddp-") as workdir:
        folder = Path(workdir)
        (folder / "tmp").mkdir()
        base_env = {
            **os.environ,
            STORE_ENV: str(folder / "store"),
            LAUNCHER_ENV: str(os.getpid()),
            ERRORS_ENV: workdir,
            TEST_BOUND_ENV: "0",  # the launcher's bound holds for the ranks
            "TMPDIR": str(folder / "tmp"),  # the ranks' temporary files go with the launcher's folder
            "WORLD_SIZE": str(world_size),
            "LOCAL_WORLD_SIZE": str(world_size),
            "GLOO_SOCKET_IFNAME": "lo",
            "OMP_NUM_THREADS": "1",
            "PYTHONUNBUFFERED": "1",
        }
        logs = [(folder / f"rank{r}.out", folder / f"rank{r}.err") for r in range(world_size)]
        processes: list[subprocess.Popen] = []
        try:
            for rank, (out, err) in enumerate(logs):
                env = {**base_env, "RANK": str(rank), "LOCAL_RANK": str(rank)}
                command = [sys.executable, "-m", "parity.training.launch.rank_start", module, *args]
                with out.open("w") as stdout, err.open("w") as stderr:
                    processes.append(subprocess.Popen(command, env=env, stdout=stdout, stderr=stderr, process_group=0))
            _wait(processes, folder, bound)
        finally:
            _kill_groups(processes)
        return [out.read_text() for out, _ in logs]


def _kill_groups(processes: list[subprocess.Popen]) -> None:
    """Each rank and everything it started (its DataLoader workers share its process group). Ctrl-C and
    SIGTERM wait until it is done, so a second interrupt cannot cut the cleanup short."""
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        for process in processes:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            process.wait()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)


def _wait(processes: list[subprocess.Popen], folder: Path, bound: float | None) -> None:
    started = time.monotonic()
    while any(process.poll() is None for process in processes):
        if any(process.returncode not in (None, 0) for process in processes):
            raise RankFailed(_failure(processes, folder, time.monotonic() - started))
        if bound is not None and time.monotonic() - started > bound:
            seconds = time.monotonic() - started
            raise RankFailed(_hang(processes, folder, f"the {len(processes)}-rank run timed out after {seconds:.0f} s"))
        time.sleep(0.05)
    if any(process.returncode != 0 for process in processes):
        raise RankFailed(_failure(processes, folder, time.monotonic() - started))


#: How Gloo (and NCCL) say a collective outlived the group's timeout.
_COLLECTIVE_TIMEOUT = re.compile(r"Timed out waiting \d+ ?ms|DistBackendError|collective operation timeout")


#: How Gloo says the other end of a collective went away: a consequence of the peer's own ending, never the cause.
_PEER_CLOSED = re.compile(r"Connection (?:closed|reset) by peer")
#: How long the other ranks get to end (and write their own errors) once one has failed.
PEER_GRACE_S = 1.0


def _failure(processes: list[subprocess.Popen], folder: Path, seconds: float) -> str:
    """The first rank that ended without reporting an error (``os._exit``, a signal: its peers' errors are
    its consequences), how it ended and the tail of its stderr; else the earliest error a rank wrote that is
    not a peer's going away, unless it is a collective's timeout while a peer still runs: then the peers'
    stacks, as for a hang; or every rank timed out in a collective: then the collectives each one was in."""
    ending = time.monotonic()
    while any(p.poll() is None for p in processes) and time.monotonic() - ending < PEER_GRACE_S:
        time.sleep(0.05)
    reported = {int(path.stem.removeprefix("rank")): path for path in folder.glob("rank*.error")}
    abrupt = [(r, p) for r, p in enumerate(processes) if p.returncode not in (None, 0) and r not in reported]
    if abrupt:  # a rank that ended without a word: what its peers then raised follows from it
        rank, process = abrupt[0]
        return f"rank {rank} {ended(process.returncode)}:\n{_tail(folder / f'rank{rank}.err')}"
    firsts = {r: path.read_text().splitlines()[0] for r, path in sorted(reported.items())}
    by_time = sorted(reported, key=lambda r: reported[r].stat().st_mtime_ns)
    rank = next((r for r in by_time if not _PEER_CLOSED.search(firsts[r])), by_time[0])
    text = reported[rank].read_text().rstrip()
    if _COLLECTIVE_TIMEOUT.search(firsts[rank]) and any(p.poll() is None for p in processes):
        # it waited for a peer that never came: the hang is the peer's, and its stack says where
        return _hang(processes, folder, f"rank {rank} timed out after {seconds:.0f} s in a collective its peers did not join")
    if len(firsts) == len(processes) and _COLLECTIVE_TIMEOUT.search(firsts[rank]) and all(
        _COLLECTIVE_TIMEOUT.search(first) or _PEER_CLOSED.search(first) for first in firsts.values()
    ):
        return _unmatched(rank, firsts) + f"\n{text}"
    return f"rank {rank} failed: {text}"


_WAITED_MS = re.compile(r"Timed out waiting (\d+) ?ms")


def _unmatched(rank: int, firsts: dict[int, str]) -> str:
    """``rank`` timed out in a collective and every other rank ended in one too, none left waiting for a live
    peer: their collectives did not pair up (a rank skipped one its peers called, or called them in another
    order). Each rank's collective and the target's call into it."""
    places = []
    for other, first in firsts.items():
        raised = raised_in(first)  # the collective, and the target's call into it
        place = f"rank {other} in `{raised[0]}`" if raised else f"rank {other}"
        places.append(place + (f", called from `{raised[1]}` ({raised[2]})" if raised and raised[1] else ""))
    waited = _WAITED_MS.search(firsts[rank])
    after = f" after {int(waited[1]) / 1000:.0f} s" if waited else ""
    return (f"rank {rank} timed out{after} in a collective no peer joined, and no peer hangs: the ranks called "
            f"different collectives (one skipped or reordered a collective the others called): " + "; ".join(places))


def ended(returncode: int) -> str:
    """``exited with status N``, or ``was killed by SIGSEGV (signal 11)``."""
    return process_ended(returncode) if returncode >= 0 else f"was {process_ended(returncode)}"


def _hang(processes: list[subprocess.Popen], folder: Path, headline: str) -> str:
    """``headline``, then every live rank's stack (faulthandler, on ``SIGUSR1``), read into where each one was."""
    live = [(rank, process) for rank, process in enumerate(processes) if process.poll() is None]
    sizes = {rank: (folder / f"rank{rank}.err").stat().st_size for rank, _ in live}
    for _, process in live:
        process.send_signal(signal.SIGUSR1)
    asked = time.monotonic()
    while time.monotonic() - asked < STACK_GRACE_S and not all(
        (folder / f"rank{rank}.err").stat().st_size > sizes[rank] for rank, _ in live
    ):
        time.sleep(0.05)
    time.sleep(0.2)  # the dump is written in one go; let it end
    places, stacks = [], []
    for rank, _ in live:
        with (folder / f"rank{rank}.err").open(errors="replace") as handle:
            handle.seek(sizes[rank])
            frames = _running_frames(handle.read())
        places.append(f"rank {rank} {where(frames)}")
        stacks.append(f"rank {rank} (most recent call first):\n" + "\n".join(
            f"  {short_path(file)}:{line} in {name}" for file, line, name in frames[:12]))
    return f"{headline}: " + "; ".join(places) + "\n" + "\n".join(stacks)


_FRAME = re.compile(r'^\s+File "(.+)", line (\d+) in (\S+)')


def _running_frames(dump: str) -> list[tuple[str, int, str]]:
    """The frames (innermost first) of the thread in a faulthandler dump that runs the rank's module."""
    threads: list[list[tuple[str, int, str]]] = []
    for line in dump.splitlines():
        if "(most recent call first)" in line:
            threads.append([])
        elif threads and (match := _FRAME.match(line)):
            threads[-1].append((match[1], int(match[2]), match[3]))
    return next((frames for frames in threads if any(name == "_run_module_as_main" for _, _, name in frames)), [])


def where(frames: list[tuple[str, int, str]]) -> str:
    """``in `f` (path:line)`` for the innermost frame outside torch and Python's own library, and the
    collective a rank waits in; for a rank that gave no stack, that it was still starting."""
    if not frames:
        return "gave no stack (still starting: not yet past its imports)"
    torch_root = os.path.dirname(torch.__file__)
    caller = next(((f, n, name) for f, n, name in frames if not f.startswith((torch_root, sys.base_prefix, "<"))), None)
    collective = next((name for f, _, name in frames if f"{os.sep}distributed{os.sep}" in f and f.startswith(torch_root)
                       and not name.startswith("_") and name != "wrapper"), None)
    if collective is None and any(f"{os.sep}autograd{os.sep}" in f for f, _, _ in frames):
        collective = "DDP's gradient all-reduce (in backward)"
    text = f"in `{caller[2]}` ({short_path(caller[0])}:{caller[1]})" if caller else "in torch"
    if collective:
        text += f", waiting in `{collective}`" if " " not in collective else f", waiting in {collective}"
    return text


def _tail(path: Path, lines: int = 30) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
