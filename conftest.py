"""What this clone's own test tree shares; the plugin (parity/pytest_plugin.py) keeps what every user gets.

Loaded only by pytest runs rooted here, so ``pytest --pyargs parity.suite`` from another repository
never sees it (tests/harness/test_plugin_outside.py).
"""

from __future__ import annotations

import pytest

#: Checks too slow for the default run's 90 s (a fresh interpreter, a fault that must time out, a
#: browser, a server, a fresh virtual environment). Deselected by ``addopts`` in pyproject.toml;
#: ``.ci/run`` runs them on a line of their own, ``pytest -n auto -m long`` (docs/running.md).
LONG = "long: too slow for the default run; .ci/run runs them apart (pytest -m long)"
#: ``@pytest.mark.needs(PART)``: what the README's install does not bring (tests/optional_parts.py); pytest's
#: own ``pytester`` for the tests that run a throwaway session in-process.
pytest_plugins = ("tests.optional_parts", "pytester")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", LONG)


@pytest.fixture
def harness_self_check(pytestconfig: pytest.Config) -> None:
    """A check of the harness itself (tests/quality): it does not depend on ``--parity-target``, so it runs in
    the default session and skips under any other target."""
    selected = getattr(pytestconfig, "parity_target", None)
    if selected is not None and selected.name != "impl":
        pytest.skip(f"a self-check of the harness; it does not depend on --parity-target {selected.name}")
