"""The parts the README's install (``pip install -e '.[test]'``) does not bring, and the ``needs`` marker.

A test that needs one says ``@pytest.mark.needs(PART)`` (on itself, its class or its module's
``pytestmark``) and skips where the part is absent, the reason naming the install. ``.ci/run`` installs
every part and also runs the default suite without them (``tox -e bare``); tests/harness/test_optional_parts.py
holds every test module that touches a part to the marker. Loaded by the root conftest.py, so only runs
rooted in this clone see it.
"""

from __future__ import annotations

import shutil
from importlib.util import find_spec

import pytest

#: part -> (is it here, how to install it).
OPTIONAL_PARTS = {
    "megatron-core": (lambda: find_spec("megatron") is not None and find_spec("megatron.core") is not None,
                      "pip install --no-deps 'megatron-core>=0.14,<0.17' 'packaging>=24.2' (docs/install.md)"),
    "redis-server": (lambda: shutil.which("redis-server") is not None, "apt-get install redis-server (Debian)"),
    "chromium": (lambda: shutil.which("chromium") is not None, "apt-get install chromium (Debian)"),
    "hypofuzz": (lambda: find_spec("hypofuzz") is not None, "pip install hypofuzz (or tox -e fuzz)"),
    "trl": (lambda: find_spec("trl") is not None and find_spec("datasets") is not None,
            "pip install --no-deps trl==1.16.0 datasets==4.8.5 and what they import, as .ci/run does (docs/causal-lm.md, TRL)"),
    # the field's own loops (docs/causal-lm.md, The field's own loops), each installed as .ci/run does
    "litgpt": (lambda: find_spec("litgpt") is not None and find_spec("lightning") is not None,
               "pip install --no-deps litgpt==0.5.13 lightning==2.6.6 lightning-utilities==0.15.3 torchmetrics==1.9.0, "
               "as .ci/run does (docs/causal-lm.md, The field's own loops)"),
    "torchtune": (lambda: find_spec("torchtune") is not None and find_spec("torchao") is not None,
                  "pip install --no-deps torchtune==0.6.1 torchao==0.10.0 and what it imports, as .ci/run does "
                  "(docs/causal-lm.md, The field's own loops)"),
    "torchtitan": (lambda: find_spec("torchtitan") is not None and find_spec("triton") is not None,
                   "tox -e torchtitan (torchtitan==0.3.0 beside triton==3.9.0 and what it imports, kept out of the "
                   "default run's environment; docs/causal-lm.md, The field's own loops)"),
}
NEEDS = "needs(part, ...): skips, naming the install, unless each optional part is here: " + ", ".join(OPTIONAL_PARTS)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", NEEDS)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A part no table row names is a usage error before any test runs (a typo would otherwise never skip)."""
    for item in items:
        unknown = sorted({part for marker in item.iter_markers("needs") for part in marker.args} - set(OPTIONAL_PARTS))
        if unknown:
            raise pytest.UsageError(f"{item.nodeid}: needs({', '.join(unknown)}): known parts: {', '.join(OPTIONAL_PARTS)}")


def pytest_runtest_setup(item: pytest.Item) -> None:
    named = dict.fromkeys(part for marker in item.iter_markers("needs") for part in marker.args)
    missing = [part for part in named if not OPTIONAL_PARTS[part][0]()]
    if missing:
        pytest.skip("; ".join(f"needs {part}, not installed here: {OPTIONAL_PARTS[part][1]}" for part in missing))
