"""Ctrl-C and SIGTERM end a run in one line and 130 or 143 (parity.safety.interrupts, docs/faults.md, Interrupts)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from parity.safety.interrupts import INTERRUPTED_LINE, UNSIGNALLED_LINE, run_interruptible


def test_sigterm_unwinds_through_the_cleanups_and_exits_143(capsys):
    cleaned = []

    def run():
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(30)
        finally:
            cleaned.append(True)
        return 0

    assert run_interruptible(run) == 143
    assert cleaned == [True]
    assert capsys.readouterr().err == INTERRUPTED_LINE + "\n"


#: Ctrl-C on a run, in a child whose SIGINT is Python's own handler, as a terminal starts it: this process may have
#: inherited SIGINT ignored (a background job of a non-interactive shell, ``nohup``, some CI runners), which
#: ``watch_signals`` rightly leaves ignored, so the signal would never arrive here.
CTRL_C_CHILD = """
import os, signal, sys, time
signal.signal(signal.SIGINT, signal.default_int_handler)
from parity.safety.interrupts import run_interruptible

def run():
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(30)
    return 0

sys.exit(run_interruptible(run))
"""


def test_ctrl_c_exits_130():
    done = subprocess.run([sys.executable, "-c", CTRL_C_CHILD], capture_output=True, text=True, timeout=60, check=False)
    assert (done.returncode, done.stderr) == (130, INTERRUPTED_LINE + "\n")


def test_an_ignored_ctrl_c_stays_ignored():
    """Under ``nohup`` the run is not interrupted: the disposition it inherited is kept (docs/faults.md, Interrupts)."""
    ignoring = CTRL_C_CHILD.replace("signal.default_int_handler", "signal.SIG_IGN").replace("time.sleep(30)", "time.sleep(0.2)")
    done = subprocess.run([sys.executable, "-c", ignoring], capture_output=True, text=True, timeout=60, check=False)
    assert (done.returncode, done.stderr) == (0, "")


def test_a_keyboard_interrupt_no_signal_raised_is_a_failure_not_a_cancel(capsys):
    """xdist's ``-x`` and target code raise ``KeyboardInterrupt`` themselves: CI must not read 130, "cancelled"."""

    def run():
        raise KeyboardInterrupt

    assert run_interruptible(run) == 1
    assert capsys.readouterr().err == UNSIGNALLED_LINE + "\n"


def test_a_run_that_ends_keeps_its_status():
    assert run_interruptible(lambda: 1) == 1
