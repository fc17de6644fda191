"""An interrupted ``python -m parity ddp`` ends every rank, removes its folders, says one line and exits 130
(Ctrl-C) or 143 (SIGTERM) (docs/faults.md, Interrupts)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from tests.faults.test_ranks import processes_with

pytestmark = [pytest.mark.long, pytest.mark.distributed, pytest.mark.xdist_group("distributed")]


@pytest.mark.parametrize(("signum", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_an_interrupted_ddp_run_leaves_nothing(tmp_path, signum, status):
    token = f"{os.getpid()}-{time.monotonic_ns()}"
    env = {**os.environ, "PARITY_FAULT_TOKEN": token, "TMPDIR": str(tmp_path)}
    # Ctrl-C's disposition as a terminal gives it: a process started with SIGINT ignored keeps it ignored (POSIX, and
    # Python honours it), and this worker's may have been set so by a library an earlier test ran (hypercorn does).
    run = subprocess.Popen([sys.executable, "-m", "parity", "ddp", "--target", "impl"], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 120
    while len(set(processes_with(token)) - {run.pid}) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert len(set(processes_with(token)) - {run.pid}) == 2, "the ranks did not start"
    run.send_signal(signum)
    signalled = time.monotonic()
    _, err = run.communicate(timeout=60)
    assert run.returncode == status, err
    # Ended by the interrupt, not after the cases: the launcher's cleanup runs where the interrupt lands.
    assert time.monotonic() - signalled < 15 and "(4/4)" not in err, err
    assert err.strip().splitlines()[-1] == "interrupted; nothing written", err
    assert processes_with(token) == []
    # The run's own folders are gone; torch's cache folder (torchinductor_<user>, made when the Trainer is imported)
    # is torch's, kept on purpose as it is in any temporary directory.
    assert [path.name for path in tmp_path.iterdir() if path.name.startswith("parity-")] == []
