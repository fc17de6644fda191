"""A DataLoader worker stuck in the target's ``__getitem__`` dies with the process that iterates it
(docs/faults.md, DataLoader workers): the DataLoader property's workers, when that process is killed
as pytest-timeout or the OOM killer kills a test's worker, where no cleanup runs."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.long

#: The DataLoader property on a dataset whose workers hang; the process prints each worker's pid.
SCRIPT = """
from parity.table.checks.dataset import check_dataloader_matches_oracle
from parity.strategies.dataset import UPSTREAM_PR_CASE
from tests.faults.targets import hangs_in_a_dataloader_worker
check_dataloader_matches_oracle(hangs_in_a_dataloader_worker, UPSTREAM_PR_CASE, 2)
"""


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ")[-1][0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's")
def test_a_hung_dataloader_worker_does_not_outlive_the_killed_process():
    environment = {**os.environ, "PARITY_TEST_BOUND_S": "0"}  # no call bound: the process is killed while it waits
    iterating = subprocess.Popen([sys.executable, "-c", SCRIPT], stdout=subprocess.PIPE, text=True, env=environment)
    try:
        workers = [int(iterating.stdout.readline().split()[1]) for _ in range(2)]
        assert all(map(alive, workers))
        iterating.send_signal(signal.SIGKILL)
        iterating.wait(timeout=30)
        deadline = time.monotonic() + 30
        while any(map(alive, workers)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not [pid for pid in workers if alive(pid)], "a DataLoader worker outlived the process that started it"
    finally:
        iterating.kill()
        iterating.wait(timeout=30)
