"""The distributed tests rely on xdist's ``--dist=loadgroup`` (pyproject.toml's addopts): one worker runs
the group, so the session fixture of tests/training/test_ddp.py launches its process groups once.
pytest 9.2 silently broke that grouping (pytest-dev/pytest-xdist#1386); this test says so instead of the
suite quietly paying every launch once per worker."""

import os

import pytest


@pytest.mark.xdist_group("distributed")
def test_a_grouped_test_runs_in_its_group(request):
    if not os.environ.get("PYTEST_XDIST_WORKER") or not request.config.getvalue("loadgroup"):
        pytest.skip("not run by xdist with --dist=loadgroup")
    assert request.node.nodeid.endswith("@distributed"), (
        f"xdist did not group {request.node.nodeid!r}: this pytest ({pytest.__version__}) breaks --dist=loadgroup"
    )
