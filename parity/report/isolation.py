"""A target of yours runs each report scenario in a child process (docs/faults.md, Targets that end the process).

A target can end the process it runs in: ``os._exit``, a segfault, ``SystemExit``, the OOM killer. In
``python -m parity`` that would take every other column, the verdict line and ``--json`` with it. So a
target that is not built in runs each of its scenarios in a child: forked on CPU, where the parent's
imports are the child's and a fork costs milliseconds; spawned on CUDA, which a forked child cannot use
again, at the cost of a fresh interpreter (torch and transformers imported, CUDA initialised: seconds a
scenario). The child sends its scenario result back pickled through a pipe; a child that ends without
sending it becomes a ``crash`` column naming the exit status or the signal and the last target call it
started (``parity.safety.bounds`` reports each call as it starts, into memory or a file the parent reads).
"""

from __future__ import annotations

import contextlib
import faulthandler
import multiprocessing
import os
import pickle
import select
import signal
import sys
import tempfile
import time
from collections.abc import Callable

import torch

from parity.safety import bounds, third_party
from parity.safety.crash import process_ended
from parity.safety.parent_death import die_with_parent

#: A spawned child's own start (a fresh interpreter importing torch and the target's modules), bounded apart
#: from its scenario: on a loaded CI machine start and imports took over 5 s, and charging them to the scenario
#: bound called a slow start the target's hang.
SPAWN_START_S = 120.0
_STARTED = b"started"


def start_method(device: str) -> str:
    """How a target of yours gets its child on ``device``: ``fork``, or ``spawn`` on CUDA (or without fork)."""
    return "fork" if hasattr(os, "fork") and device != "cuda" else "spawn"


class ChildEnded(Exception):
    """The child ended before it sent its result; the message says how and in which call."""


def run_in_child(work: Callable[[], object], start: str = "fork", prepare: Callable[[], object] | None = None) -> object:
    """``work()`` in a child (``start``: ``fork``, or ``spawn``, where ``work`` and ``prepare`` must pickle and
    ``prepare()``, the target's imports, is part of the child's start, before its bound begins), its result
    returned here; an exception it raised is raised here (re-created from its type name and message when it
    cannot be pickled); :class:`ChildEnded` when the child's process ended without a result, or outlived the
    per-test bound (``parity.safety.bounds.test_bound``)."""
    for stream in (sys.stdout, sys.stderr):
        stream.flush()  # or a forked child's copy of a buffer would be written twice
    if start == "spawn":
        return _spawned(work, prepare)
    slot = bounds.CallSlot()  # anonymous and shared: what the child writes, the parent reads
    read_end, write_end = os.pipe()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:  # the child: never returns into the caller's stack
        os.close(read_end)
        # An OpenMP team the parent started is not there after a fork, and joining it hangs (GNU libgomp): one
        # thread, as torch's DataLoader workers do.
        torch.set_num_threads(1)
        _enter_child(parent)
        _child(work, slot, lambda data: _write_all(write_end, data))
    os.close(write_end)
    data, timed_out = _read_within(read_end, bounds.test_bound())
    if timed_out:  # a hang no bounded call caught (outside any target call): the child goes, the report stays
        os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    return _outcome(data, timed_out, os.waitstatus_to_exitcode(status), slot)


def _write_all(fd: int, data: bytes) -> None:
    with os.fdopen(fd, "wb") as pipe:
        pipe.write(data)


def _spawned(work: Callable[[], object], prepare: Callable[[], object] | None) -> object:
    """:func:`run_in_child` in a fresh interpreter (``multiprocessing``'s spawn), the call slot a file."""
    with tempfile.TemporaryDirectory(prefix="parity-child-") as folder:
        path = os.path.join(folder, "call")
        slot = bounds.CallSlot(path)
        context = multiprocessing.get_context("spawn")
        receiving, sending = context.Pipe(duplex=False)
        child = context.Process(
            target=_spawned_child, args=(work, os.getpid(), path, sending, prepare), daemon=True)
        child.start()
        sending.close()
        started, start_timed_out = _received_within(receiving, SPAWN_START_S if bounds.test_bound() else None)
        if start_timed_out or started != _STARTED:
            child.kill()
            child.join()
            if start_timed_out:
                raise ChildEnded(f"the target's spawned child did not start within {SPAWN_START_S:.0f} s "
                                 "(a fresh interpreter importing torch and the target's modules)")
            raise ChildEnded(f"the target's spawned child ended as it started: {process_ended(child.exitcode)}")
        data, timed_out = _received_within(receiving, bounds.test_bound())
        if timed_out:
            child.kill()
        child.join()
        return _outcome(data, timed_out, child.exitcode, slot)


def _spawned_child(work: Callable[[], object], parent: int, slot_path: str, sending,
                   prepare: Callable[[], object] | None) -> None:
    """Says it has started (``work`` unpickled, ``prepare()`` done), so the scenario bound begins only now."""
    _enter_child(parent)  # before ``prepare``: an import's warnings are counted, a dead parent ends it
    if prepare is not None:
        with contextlib.suppress(Exception):  # the work meets the error again, as the target's, as when forked
            prepare()
    sending.send_bytes(_STARTED)
    _child(work, bounds.CallSlot(slot_path), sending.send_bytes)


def _received_within(receiving, seconds: float | None) -> tuple[bytes, bool]:
    """What the spawned child sent (empty when it ended without), and whether ``seconds`` ran out first."""
    if not receiving.poll(seconds):
        return b"", True
    try:
        return receiving.recv_bytes(), False
    except EOFError:
        return b"", False


def _enter_child(parent: int) -> None:
    """A child's first steps, forked or spawned, before any target code runs in it."""
    die_with_parent(parent)  # an interrupted report leaves no child behind (docs/faults.md, Interrupts)
    for interrupt in (signal.SIGINT, signal.SIGTERM):  # the parent's handlers say "interrupted", once
        signal.signal(interrupt, signal.SIG_DFL)
    faulthandler.disable()  # a segfault's dump would interleave with the report; the crash column names the call
    third_party.restart_in_child()  # its warnings counted here, sent back, counted once in the parent


def _child(work: Callable[[], object], slot: bounds.CallSlot, send: Callable[[bytes], object]) -> None:
    """The rest of the child's life: ``work()``, its outcome pickled and sent, then ``os._exit``."""
    status = 0
    try:
        bounds.on_call = slot.remember
        payload = ("result", work())
    except SystemExit as exit_:  # the target asked to end the process: it ends, as it would have
        os._exit(exit_.code if isinstance(exit_.code, int) else 1)
    except BaseException as error:  # noqa: BLE001 - every outcome goes back to the parent
        payload = ("raised", error)
    payload = (*payload, third_party.counts())
    try:
        data = pickle.dumps(payload)
        pickle.loads(data)  # an exception whose arguments do not rebuild it would fail in the parent
    except Exception as error:  # noqa: BLE001 - an unpicklable exception: its words travel instead
        raised = payload[1] if payload[0] == "raised" else error
        data = pickle.dumps(("raised", RuntimeError(f"{type(raised).__name__}: {raised}"), third_party.counts()))
    try:
        send(data)
    except BaseException:  # noqa: BLE001 - the parent reads nothing and says so
        status = 1
    os._exit(status)


def _outcome(data: bytes, timed_out: bool, exitcode: int, slot: bounds.CallSlot) -> object:
    last = slot.last()
    slot.close()
    where = f" in {last}" if last else ""
    if timed_out:
        raise ChildEnded(f"the target's scenario timed out after {bounds.test_bound():.0f} s{where}")
    if not data:
        raise ChildEnded(f"the target ended the process: {process_ended(exitcode)}{where}")
    kind, value, tally = pickle.loads(data)
    third_party.merge(tally)
    if kind == "raised":
        raise value
    return value


def _read_within(fd: int, seconds: float | None) -> tuple[bytes, bool]:
    """All the child writes before it closes its end, and whether ``seconds`` (None: no bound) ran out first.
    The bound is the per-test one (``parity.safety.bounds.test_bound``): each target call inside the child has the
    shorter call bound, so this ends only what no call bound could (a hang in the harness's own code)."""
    chunks, deadline = [], None if seconds is None else time.monotonic() + seconds
    with os.fdopen(fd, "rb", buffering=0) as pipe:
        while True:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return b"".join(chunks), True
            ready, _, _ = select.select([pipe], [], [], left)
            if not ready:
                continue
            chunk = pipe.read(1 << 16)
            if not chunk:
                return b"".join(chunks), False
            chunks.append(chunk)
