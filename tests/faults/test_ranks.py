"""Rank faults end in a verdict that names them, and leave no process behind (docs/faults.md, Ranks).

Each fault is one trainer of tests/faults/targets.py run on two real ranks (``parity.training.diffusion.drivers.ranks``,
one case), or the launcher itself killed."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from parity.training.launch.processes import RankFailed, launch

pytestmark = [pytest.mark.long, pytest.mark.distributed, pytest.mark.xdist_group("distributed")]

TARGETS = "tests.faults.targets"


def run_on_two_ranks(trainer: str, timeout_s: float = 240) -> str:
    with pytest.raises(RankFailed) as failed:
        launch("parity.training.diffusion.drivers.ranks", ["--trainer", f"{TARGETS}:{trainer}", "--case", "unequal-counts"], 2,
               timeout_s=timeout_s)
    return str(failed.value)


def test_a_rank_s_own_error_is_the_verdict_not_its_peer_s_timeout():
    message = run_on_two_ranks("RaisesOnRankOne")
    assert message.startswith(
        "rank 1 failed: the target crashed in case unequal-counts: ValueError: rank 1's own loss failed at "
        "tests/faults/targets.py:"
    ), message
    assert "(in compute_loss)" in message.splitlines()[0] and "Timed out" not in message


def test_a_rank_that_hangs_is_named_with_the_call_it_hangs_in():
    message = run_on_two_ranks("SleepsOnRankOne", timeout_s=200)  # past the ranks' start on a busy machine
    first = message.splitlines()[0]
    # Gloo's own 60 s timeout on rank 0 comes before the launcher's bound: the hang is still rank 1's.
    assert re.match(r"rank 0 timed out after \d+ s in a collective its peers did not join: "
                    r"rank 1 in `compute_loss` \(tests/faults/targets.py:\d+\)$", first), message
    assert "rank 1 (most recent call first):\n  tests/faults/targets.py:" in message, message


def test_a_rank_that_skips_a_collective_is_named_with_each_rank_s_collective():
    """Rank 1 leaves out the count all-reduce: each rank waits in a collective the other never calls."""
    first = run_on_two_ranks("SkipsTheCountOnRankOne").splitlines()[0]
    assert re.match(r"rank [01] timed out after \d+ s in a collective no peer joined, and no peer hangs: the ranks called "
                    r"different collectives \(.*\): rank 0 in `all_reduce`, called from `window_count` "
                    r"\(impl/logits_trainer.py:\d+\); rank 1 in `\w+`, called from `forward_and_sum` "
                    r"\(impl/logits_trainer.py:\d+\)$", first), first


@pytest.mark.parametrize(("trainer", "ended"), [("ExitsOnRankOne", "exited with status 3"),
                                                ("SegfaultsOnRankOne", "was killed by SIGSEGV (signal 11)")])
def test_a_rank_that_ends_its_process_is_named_with_how(trainer, ended):
    assert run_on_two_ranks(trainer).startswith(f"rank 1 {ended}:")


def processes_with(token: str) -> list[int]:
    """The live processes whose environment holds ``token``."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            live = entry.name.isdigit() and (entry / "stat").read_text().split(") ")[-1][0] != "Z"
            if live and token.encode() in (entry / "environ").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def test_killing_the_launcher_leaves_no_rank_behind(tmp_path):
    """SIGKILL runs no cleanup: the ranks die of their parent-death signal; the folder (under tmp_path) stays."""
    token = f"PARITY_FAULT_TOKEN={os.getpid()}-{time.monotonic_ns()}"
    script = "from parity.training.launch.processes import launch; launch('parity.training.launch.selfcheck', ['--hang-rank', '1'], 2, 300)"
    env = {**os.environ, "PARITY_FAULT_TOKEN": token.split("=")[1], "TMPDIR": str(tmp_path)}
    launcher = subprocess.Popen([sys.executable, "-c", script], env=env)
    deadline = time.monotonic() + 120
    while len(set(processes_with(token)) - {launcher.pid}) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    ranks = set(processes_with(token)) - {launcher.pid}
    assert len(ranks) == 2, "the ranks did not start"
    launcher.send_signal(signal.SIGKILL)
    launcher.wait()
    deadline = time.monotonic() + 30
    while processes_with(token) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert processes_with(token) == [], "ranks outlived their launcher"
