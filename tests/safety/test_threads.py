"""Entry points ask OpenMP to wait passively before torch is loaded (parity.safety.threads): the CLI at import,
the pytest plugin in a parity session only (tests/harness/test_plugin_inert.py: nothing elsewhere)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

#: Runs an entry with an import hook that records the policy at the moment torch is first imported.
PROBE = """
import builtins, os
real_import = builtins.__import__
seen = []
def spy(name, *args, **kwargs):
    if name == "torch" and not seen:
        seen.append(os.environ.get("OMP_WAIT_POLICY"))
    return real_import(name, *args, **kwargs)
builtins.__import__ = spy
{entry}
import torch
print(seen[0])
"""

ENTRIES = {
    "cli": "import parity.__main__",
    # A parity session from an empty folder: the plugin loads the target and shares the cores (torch).
    "plugin": "import pytest, tempfile; pytest.main(['-q', '-p', 'no:cacheprovider', '-p', 'no:xdist', "
    "'--parity-target', 'impl', '--collect-only', tempfile.mkdtemp()])",
}


@pytest.mark.long  # each entry a fresh interpreter that imports torch (4 s)
@pytest.mark.parametrize("entry", ENTRIES)
def test_passive_waiting_is_set_before_torch_is_imported(entry):
    environment = {key: value for key, value in os.environ.items() if key != "OMP_WAIT_POLICY"}
    result = subprocess.run(
        [sys.executable, "-c", PROBE.format(entry=ENTRIES[entry])], capture_output=True, text=True, timeout=120, env=environment
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[-1] == "PASSIVE" and result.stdout.count("PASSIVE") == 1, result.stdout


def test_a_users_own_policy_wins(monkeypatch):
    from parity.safety.threads import wait_passively

    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")
    wait_passively()
    assert os.environ["OMP_WAIT_POLICY"] == "ACTIVE"
