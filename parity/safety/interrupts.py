"""Ctrl-C and SIGTERM end a run whole (docs/faults.md, Interrupts).

SIGTERM's default action ends the process on the spot, past every ``finally``: the ranks a launch
started and their folders would stay. So an entry point turns SIGTERM into :class:`Terminated`, a
``KeyboardInterrupt``, and every cleanup that Ctrl-C runs (the launcher killing its ranks' process
groups, a DataLoader shutting its workers down, temporary folders) runs for it too. The run then says
one line and exits 130 for Ctrl-C, 143 for SIGTERM, as a shell reports a process those signals ended.

Only a signal the process received gives those codes: every CI system reads 130 as "cancelled". Code
raises ``KeyboardInterrupt`` too (pytest-xdist's ``-x``/``--maxfail`` stops its session with one), and a
run stopped that way keeps the status its own tool gives, so the handlers record which signal came.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable

INTERRUPTED_LINE = "interrupted; nothing written"

_received: list[int] = []  # the signals this process received since :func:`watch_signals`


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the process was, so that it unwinds as Ctrl-C does."""


def _raise_terminated(signum, frame):
    _received.append(signum)
    raise Terminated()


def _raise_interrupted(signum, frame):
    _received.append(signum)
    raise KeyboardInterrupt()


def watch_signals() -> None:
    """From now on SIGTERM raises :class:`Terminated` and Ctrl-C ``KeyboardInterrupt``, each remembered
    as received (a no-op off the main thread; a SIGINT that is ignored, as under ``nohup``, stays ignored)."""
    if threading.current_thread() is not threading.main_thread():
        return
    _received.clear()
    signal.signal(signal.SIGTERM, _raise_terminated)
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _raise_interrupted)


def exit_status(error: KeyboardInterrupt) -> int | None:
    """130 for Ctrl-C, 143 for SIGTERM; None for a ``KeyboardInterrupt`` no signal raised."""
    if isinstance(error, Terminated):
        return 128 + signal.SIGTERM
    return 128 + signal.SIGINT if signal.SIGINT in _received else None


#: What a run says when code, not a signal, raised ``KeyboardInterrupt``; the run then fails (1).
UNSIGNALLED_LINE = "stopped: code raised KeyboardInterrupt without a signal (a target's own?); nothing written"


def run_interruptible(run: Callable[[], int]) -> int:
    """``run()``; interrupted, one line on stderr and :func:`exit_status` (1 where no signal came)."""
    watch_signals()
    try:
        return run()
    except KeyboardInterrupt as error:
        status = exit_status(error)
        print(INTERRUPTED_LINE if status is not None else UNSIGNALLED_LINE, file=sys.stderr, flush=True)
        return 1 if status is None else status
