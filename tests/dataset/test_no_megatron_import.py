"""``pytest --parity-target impl`` never imports megatron-core, however it is installed.

A run of the dataset properties on impl in a fresh interpreter, then a look at ``sys.modules``:
selecting a target must not load the others (parity.targets loads interfaces and installed entry
points lazily), so a slow or broken optional dependency costs a default run nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parents[2]

# Two drawn examples per property (besides the explicit ones) load and run every dataset check; what
# is asserted is the import, not the search.
SCRIPT = """
import json, sys, pytest
from hypothesis import settings
settings.register_profile("import-check", settings(settings.get_profile("ci"), max_examples=2, deadline=None))
status = pytest.main(["-q", "-p", "no:cacheprovider", "-n", "0", "--parity-target", "impl", "--hypothesis-profile", "import-check",
                      "parity/suite/test_properties.py", "tests/dataset/test_validation.py",
                      "-k", "matches_oracle or indices_match_reference or past_the_end"])
print(json.dumps({"status": int(status), "megatron": sorted(m for m in sys.modules if m.split(".")[0] == "megatron")}))
"""


@pytest.mark.long  # a fresh interpreter running properties (11 s under pytest -n auto)
def test_a_run_on_impl_imports_no_megatron_module():
    environment = {**os.environ, "HYPOTHESIS_PROFILE": "ci", "PYTEST_ADDOPTS": ""}
    environment.pop("PYTEST_XDIST_WORKER", None)
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], cwd=REPOSITORY, capture_output=True, text=True, timeout=240, env=environment
    )
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["status"] == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert result["megatron"] == []
