"""Entry points ask OpenMP to wait passively before torch is loaded (parity.threads)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

#: Imports ``module`` with an import hook that records the policy at the moment torch is first imported.
PROBE = """
import builtins, os
real_import = builtins.__import__
seen = []
def spy(name, *args, **kwargs):
    if name == "torch" and not seen:
        seen.append(os.environ.get("OMP_WAIT_POLICY"))
    return real_import(name, *args, **kwargs)
builtins.__import__ = spy
import {module}
import torch
print(seen[0])
"""


@pytest.mark.parametrize("module", ["parity.pytest_plugin", "parity.__main__"])
def test_passive_waiting_is_set_before_torch_is_imported(module):
    environment = {key: value for key, value in os.environ.items() if key != "OMP_WAIT_POLICY"}
    result = subprocess.run(
        [sys.executable, "-c", PROBE.format(module=module)], capture_output=True, text=True, timeout=120, env=environment
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["PASSIVE"]


def test_a_users_own_policy_wins(monkeypatch):
    from parity.threads import wait_passively

    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")
    wait_passively()
    assert os.environ["OMP_WAIT_POLICY"] == "ACTIVE"
