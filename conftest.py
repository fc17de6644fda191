"""What this clone's own test tree shares; the plugin (parity/pytest_plugin.py) keeps what every user gets.

Loaded only by pytest runs rooted here, so ``pytest --pyargs parity.suite`` from another repository
never sees it (tests/harness/test_plugin_outside.py).
"""

from __future__ import annotations

import pytest


@pytest.fixture
def harness_self_check(pytestconfig: pytest.Config) -> None:
    """A check of the harness itself (tests/quality): it does not depend on ``--target``, so it runs in
    the default session and skips under any other target."""
    selected = getattr(pytestconfig, "parity_target", None)
    if selected is not None and selected.name != "impl":
        pytest.skip(f"a self-check of the harness; it does not depend on --target {selected.name}")
