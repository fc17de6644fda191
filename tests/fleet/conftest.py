"""A real Redis server for the fleet tests: Debian's ``redis-server`` on a free loopback port, stopped after.

A test that asks for it says ``@pytest.mark.needs("redis-server")`` and skips, naming the install, where
the server is absent (conftest.py, OPTIONAL_PARTS); ``.ci/run`` installs it.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time

import pytest

START_TIMEOUT_S = 10.0


def _free_loopback_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _start(port: int, directory) -> subprocess.Popen:
    # No persistence: the server's data lives and dies with the test.
    return subprocess.Popen(
        ["redis-server", "--bind", "127.0.0.1", "--port", str(port), "--save", "", "--appendonly", "no", "--dir", str(directory)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip


@pytest.fixture
def redis_url(tmp_path):
    """``redis://127.0.0.1:PORT/0`` of a server of its own. A port taken between the probe and the start
    (the server then exits at once) is retried on another."""
    import redis  # the [test] extra's

    if shutil.which("redis-server") is None:  # a test that asks for the server says so: @pytest.mark.needs("redis-server")
        pytest.fail("redis-server is not on PATH and the test does not say needs('redis-server')", pytrace=False)
    for _ in range(3):
        port = _free_loopback_port()
        server = _start(port, tmp_path)
        url = f"redis://127.0.0.1:{port}/0"
        deadline, ready = time.monotonic() + START_TIMEOUT_S, False
        while not ready and server.poll() is None and time.monotonic() < deadline:
            try:
                ready = redis.Redis.from_url(url).ping()
            except redis.ConnectionError:
                time.sleep(0.02)
        if ready or server.poll() is None:
            break
    if not ready:
        server.kill()
        pytest.fail(f"redis-server did not answer on {url}: {server.communicate()[0].decode(errors='replace')[-500:]}")
    try:
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=5)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        server.stdout.close()
