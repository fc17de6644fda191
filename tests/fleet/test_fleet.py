"""The fleet search end to end (docs/fleet.md), on a real Redis server: long, run apart by .ci/run.

Two worker processes (nightly runs of the property suite) share one Redis database and find the
planted rare bug (planted:rare-corner), which the default run misses; a third run, a pull request's
(the ``ci`` profile, the database read-only), fails on it in Hypothesis's reuse phase, before any
generated example. HypoFuzz's path (``python -m parity fuzz``) runs where HypoFuzz is installed.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from parity.fleet.database import target_prefix
from parity.targets import get_target

#: Each run imports torch and the suite afresh; on a busy 2-core runner the four runs take minutes.
pytestmark = [pytest.mark.long, pytest.mark.timeout(1800), pytest.mark.usefixtures("harness_self_check")]

PLANTED = "planted:rare-corner"
#: The properties that compare the planted bug's samples or indices with the oracle.
CATCHING = "test_dataset__matches_oracle or test_dataset__indices_match_reference"
RUN_TIMEOUT_S = 900


def _environment(tmp_path, name: str, **extra: str) -> dict:
    """Another machine: no CI, a local .hypothesis of its own."""
    env = {key: value for key, value in os.environ.items() if key not in ("CI", "HYPOTHESIS_PROFILE", "PARITY_DATABASE")}
    return {**env, "HYPOTHESIS_STORAGE_DIRECTORY": str(tmp_path / name), **extra}


def _suite(*arguments: str) -> list[str]:
    return [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--pyargs", "parity.suite",
            "--parity-target", PLANTED, "-k", CATCHING, *arguments]  # fmt: skip


def _run(command: list[str], env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)


@pytest.mark.needs("redis-server")
def test_two_workers_find_the_rare_bug_and_a_pull_request_fails_on_it_first(redis_url, tmp_path):
    import redis

    default = _run(_suite(), _environment(tmp_path, "default", CI="true"))
    assert default.returncode == 0, "the default run (ci profile) reached the planted corner:\n" + default.stdout[-3000:]

    workers = [
        subprocess.Popen(_suite("--parity-database", redis_url, "--hypothesis-profile", "nightly",
                                "--hypothesis-show-statistics"),
                         env=_environment(tmp_path, f"worker-{n}"), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True)
        for n in range(2)
    ]  # fmt: skip
    outputs = [worker.communicate(timeout=RUN_TIMEOUT_S)[0] for worker in workers]
    (tmp_path / "workers.log").write_text("\n".join(outputs))
    assert any(worker.returncode == 1 and "ParityFailure" in out for worker, out in zip(workers, outputs)), outputs
    prefix = target_prefix(get_target(PLANTED))
    assert any(key.startswith(b"hypothesis-example:" + prefix) for key in redis.Redis.from_url(redis_url).keys())

    pull_request = _run(
        _suite("-n", "2", "--parity-database", redis_url, "--hypothesis-show-statistics"),
        _environment(tmp_path, "pull-request", CI="true"),
    )
    out = pull_request.stdout
    assert pull_request.returncode == 1 and "ParityFailure" in out, out[-3000:]
    statistics = [part.partition("Stopped")[0] for part in out.split("parity/suite/test_properties.py::")[1:]]
    failing = [phases for phases in statistics if re.search(r"\b[1-9]\d* failing", phases)]
    assert failing, out[-3000:]
    for phases in failing:
        assert "during reuse phase" in phases and "during generate phase" not in phases, phases


@pytest.mark.needs("redis-server", "hypofuzz")
def test_a_fuzz_campaign_finds_a_known_bug_and_reports_it_in_the_suites_words(redis_url, tmp_path):
    command = [sys.executable, "-m", "parity", "fuzz", "--target", "known-bug:cache-alias", "--property",
               "dataset/matches-oracle", "--seconds", "60", "--processes", "2", "--database", redis_url,
               "--log", str(tmp_path / "fuzz.log")]  # fmt: skip
    campaign = _run(command, _environment(tmp_path, "fuzzer"))
    out = campaign.stdout + campaign.stderr
    assert campaign.returncode == 1, out[-3000:]
    # Hypothesis names the replayed case "Failing test case" (a shrunk one "Falsifying example").
    assert "ParityFailure" in out and ("Failing test case" in out or "Falsifying example" in out), out[-3000:]
    assert "replaying what" in campaign.stderr
