"""Fixtures that hand each property the interface of the selected target, or skip it cleanly."""

from __future__ import annotations

import pytest

from parity.targets import Interface, Target


@pytest.fixture(scope="session")
def target(pytestconfig: pytest.Config) -> Target:
    return pytestconfig.parity_target


def _interface(target: Target, interface: Interface):
    if not target.provides(interface):
        pytest.skip(f"target {target.name!r} has no {interface} interface")
    return target.load(interface)


@pytest.fixture(scope="session")
def dataset_factory(target: Target):
    return _interface(target, "dataset")


@pytest.fixture(scope="session")
def diffusion_loss(target: Target):
    return _interface(target, "loss")


@pytest.fixture(scope="session")
def trainer_class(target: Target):
    return _interface(target, "trainer")
