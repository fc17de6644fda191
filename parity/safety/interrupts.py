"""Ctrl-C and SIGTERM end a run whole (docs/faults.md, Interrupts).

SIGTERM's default action ends the process on the spot, past every ``finally``: the ranks a launch
started and their folders would stay. So an entry point turns SIGTERM into :class:`Terminated`, a
``KeyboardInterrupt``, and every cleanup that Ctrl-C runs (the launcher killing its ranks' process
groups, a DataLoader shutting its workers down, temporary folders) runs for it too. The run then says
one line and exits 130 for Ctrl-C, 143 for SIGTERM, as a shell reports a process those signals ended.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable

INTERRUPTED_LINE = "interrupted; nothing written"


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the process was, so that it unwinds as Ctrl-C does."""


def _raise_terminated(signum, frame):
    raise Terminated()


def raise_on_sigterm() -> None:
    """From now on SIGTERM raises :class:`Terminated` in the main thread (a no-op off it)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _raise_terminated)


def exit_status(error: KeyboardInterrupt) -> int:
    """130 for Ctrl-C, 143 for SIGTERM."""
    return 128 + (signal.SIGTERM if isinstance(error, Terminated) else signal.SIGINT)


def run_interruptible(run: Callable[[], int]) -> int:
    """``run()``; interrupted, one line on stderr and :func:`exit_status`."""
    raise_on_sigterm()
    try:
        return run()
    except KeyboardInterrupt as error:
        print(INTERRUPTED_LINE, file=sys.stderr, flush=True)
        return exit_status(error)
