"""A project that has the harness installed and never asks for parity runs its pytest unchanged
(parity/pytest_plugin.py): its own ``--target`` option keeps working, and the plugin imports neither
Hypothesis nor torch, sets no environment variable and registers no marker there. A project's ini may name
its target (``parity_target``), which makes its runs parity sessions as ``--parity-target`` does.
"""

from __future__ import annotations

import os
import subprocess
import sys

from parity.pytest_plugin import is_parity_session, selected_target

#: The project's own root conftest: a deployment ``--target``, a common option name.
CONFTEST = '''
def pytest_addoption(parser):
    parser.addoption("--target", default="staging", help="where the project deploys")
'''

#: The project's own test: its option, and nothing of the harness's doing in the process.
TEST = '''
import os
import sys

def test_the_projects_own_target_option(pytestconfig):
    assert pytestconfig.getoption("--target") == "production"
    assert pytestconfig.getoption("parity_target") is None  # the parity group is there, unused

def test_the_plugin_did_nothing_process_wide(pytestconfig):
    assert not {"torch", "hypothesis", "parity.targets", "parity.safety.profiles"} & set(sys.modules)
    assert "OMP_WAIT_POLICY" not in os.environ
    assert not [line for line in pytestconfig.getini("markers") if line.startswith(("cuda:", "distributed:", "slow:"))]
'''


def test_a_project_with_its_own_target_option_runs_its_pytest_unchanged(tmp_path):
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_project.py").write_text(TEST)
    (tmp_path / "pytest.ini").write_text("[pytest]\naddopts = --strict-markers\n")
    environment = {key: value for key, value in os.environ.items() if key not in ("OMP_WAIT_POLICY", "PYTEST_ADDOPTS")}
    result = subprocess.run(
        # Hypothesis's own plugin imports Hypothesis when the session ends: it is the project's, not the harness's.
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", "-p", "no:hypothesispytest",
         "--target", "production"],
        cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "2 passed" in result.stdout


class _Config:
    """What ``selected_target`` reads of a config: ``--parity-target`` and the ini."""

    def __init__(self, option: str | None, ini: str):
        self.option, self.ini = option, ini

    def getoption(self, name: str):
        return self.option

    def getini(self, name: str):
        return {"parity_target": self.ini, "parity_suite": False}[name]


def test_a_projects_ini_may_name_its_target_and_the_option_wins():
    assert selected_target(_Config(None, "theirs")) == "theirs" and is_parity_session(_Config(None, "theirs"))
    assert selected_target(_Config("mine", "theirs")) == "mine"
    assert not is_parity_session(_Config(None, ""))
