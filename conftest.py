"""Suite-wide configuration: Hypothesis profiles, the ``--target`` option, per-worker torch threads.

One file, as in Hypothesis's own test tree, so a newcomer finds every knob of the run here.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

# Model-sized examples are slow and their timing is noisy on shared CI cores: no deadline anywhere.
_COMMON = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

settings.register_profile("dev", max_examples=25, **_COMMON)
# Builds on Hypothesis's own ``ci`` profile (derandomized, no database, print_blob); Hypothesis picks
# that name by itself when ``CI`` is set, so re-registering it here keeps the selection automatic.
settings.register_profile("ci", parent=settings.get_profile("ci"), max_examples=25, **_COMMON)
settings.register_profile("nightly", max_examples=1000, **_COMMON)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("parity")
    group.addoption(
        "--target",
        default="impl",
        metavar="NAME",
        help="implementation the properties run against (default: impl); see `python -m parity targets`",
    )
    group.addoption(
        "--nemotron-remote-code",
        default=None,
        metavar="PATH",
        help="local folder with NVIDIA's config.json and remote code: the built-in diffusion oracle is "
        "checked against it bit for bit (default: $PARITY_NEMOTRON_REMOTE_CODE; never a Hub id)",
    )


def pytest_configure(config: pytest.Config) -> None:
    from parity.targets import UnknownTargetError, get_target

    try:
        config.parity_target = get_target(config.getoption("--target"))
    except UnknownTargetError as error:
        raise pytest.UsageError(str(error)) from None
    remote_code = config.getoption("--nemotron-remote-code")
    if remote_code:  # through the environment, so that DDP worker processes build the same model
        from oracle.remote_code import REMOTE_CODE_ENV

        os.environ[REMOTE_CODE_ENV] = remote_code
    _limit_torch_threads()


def _limit_torch_threads() -> None:
    """Share the cores between xdist workers instead of letting each one oversubscribe all of them."""
    import torch

    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    torch.set_num_threads(max(1, (os.cpu_count() or 1) // workers))


def pytest_report_header(config: pytest.Config) -> str:
    target = config.parity_target
    return f"parity target: {target.name} ({target.description}); expected to {target.expect}"
