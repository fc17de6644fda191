"""Ctrl-C and SIGTERM end a run in one line and 130 or 143 (parity.safety.interrupts, docs/faults.md, Interrupts)."""

from __future__ import annotations

import os
import signal
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


def test_ctrl_c_exits_130(capsys):
    def run():
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(30)
        return 0

    assert run_interruptible(run) == 130
    assert capsys.readouterr().err == INTERRUPTED_LINE + "\n"


def test_a_keyboard_interrupt_no_signal_raised_is_a_failure_not_a_cancel(capsys):
    """xdist's ``-x`` and target code raise ``KeyboardInterrupt`` themselves: CI must not read 130, "cancelled"."""

    def run():
        raise KeyboardInterrupt

    assert run_interruptible(run) == 1
    assert capsys.readouterr().err == UNSIGNALLED_LINE + "\n"


def test_a_run_that_ends_keeps_its_status():
    assert run_interruptible(lambda: 1) == 1
