"""Where NVIDIA's own remote code lies on disk, if anywhere (the option is registered by the parity plugin)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def remote_code_folder(pytestconfig: pytest.Config) -> Path | None:
    """The folder the plugin activated from ``--nemotron-remote-code`` or ``$PARITY_NEMOTRON_REMOTE_CODE``
    (a Hub id's snapshot), else None (the checks that need it skip)."""
    source = getattr(pytestconfig, "parity_remote_code", None)
    return None if source is None else source.folder
