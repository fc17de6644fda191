"""A parity session exits as pytest does, the way CI scripts call it (docs/faults.md, Interrupts).

``-x`` and ``--maxfail`` stop with pytest's own code (1; 2 under xdist, whose controller stops with an
``Interrupted``, a ``KeyboardInterrupt`` no signal raised); only a signal the session received gives 130
or 143, which CI systems read as "cancelled". Each case is a pytest session of its own on a throwaway
test file, in a folder with no ini, the parity session asked for by ``--parity-target``; the default run
holds ``-x`` with and without xdist, the long run ``--maxfail`` and the signals.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

FAILING = """
def test_one():
    assert 1 == 2

def test_two():
    assert 2 == 3

def test_three():
    assert 3 == 4
"""

SLEEPING = """
import pathlib, time

def test_sleeps():
    pathlib.Path("started").write_text("")
    time.sleep(120)
"""


def pytest_command(*options: str) -> list[str]:
    return [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--parity-target", "impl", *options]


@pytest.mark.parametrize(
    ("options", "status", "stop_line"),
    [
        (["-x"], 1, "stopping after 1 failures"),
        (["-x", "-n", "2"], 2, "stopping after 1 failures"),
        pytest.param(["--maxfail=2", "-n", "2"], 2, "stopping after 2 failures", marks=pytest.mark.long),
    ],
    ids=["x", "x-n2", "maxfail-n2"],
)
def test_stopping_after_failures_keeps_pytests_own_status(tmp_path, options, status, stop_line):
    (tmp_path / "test_failing.py").write_text(FAILING)
    result = subprocess.run(pytest_command(*options), cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert result.returncode == status, result.stdout[-2000:] + result.stderr[-2000:]
    assert stop_line in result.stdout
    assert "interrupted; nothing written" not in result.stdout + result.stderr


@pytest.mark.long  # two sessions of their own, each waiting for its xdist workers to start and end
@pytest.mark.parametrize(("signum", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["sigint", "sigterm"])
def test_a_signal_the_session_receives_gives_128_plus_its_number(tmp_path, signum, status):
    (tmp_path / "test_sleeping.py").write_text(SLEEPING)
    session = subprocess.Popen(
        pytest_command("-n", "2"), cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True,  # the signal reaches this session's processes only
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # as a terminal starts it
    )
    try:
        deadline = time.monotonic() + 60
        while not (tmp_path / "started").exists() and session.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert (tmp_path / "started").exists(), "the sleeping test never started"
        os.killpg(session.pid, signum)  # as Ctrl-C in a terminal, or a CI runner's cancel, reaches the group
        output, _ = session.communicate(timeout=60)
    finally:
        if session.poll() is None:
            os.killpg(session.pid, signal.SIGKILL)
            session.wait()
    assert session.returncode == status, output[-2000:]
    assert "interrupted; nothing written" in output
