"""Where NVIDIA's own remote code lies on disk, if anywhere (option registered in the root conftest)."""

from __future__ import annotations

import os

import pytest

from oracle.remote_code import REMOTE_CODE_ENV


@pytest.fixture(scope="session")
def remote_code_folder(pytestconfig: pytest.Config) -> str | None:
    """The option's folder, else the environment variable's, else None (the checks that need it skip)."""
    return pytestconfig.getoption("--nemotron-remote-code") or os.environ.get(REMOTE_CODE_ENV) or None
