"""``python -m parity fuzz`` and ``replay`` (parity/fleet/fuzz.py): their refusals, and how a campaign's rounds end.

The campaign itself (HypoFuzz on a real target, a real Redis server) is in tests/fleet/test_fleet.py.
"""

from __future__ import annotations

import inspect
import time
from pathlib import Path

import pytest

from parity.__main__ import main
from parity.fleet import fuzz


def test_without_hypofuzz_one_line_names_the_install(monkeypatch, capsys):
    monkeypatch.setattr(fuzz, "hypothesis_cli", lambda: None)
    assert main(["fuzz", "--target", "known-bug:cache-alias", "--seconds", "5"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "pip install hypofuzz" in err and "tox -e fuzz" in err


@pytest.mark.parametrize(
    ("arguments", "names"),
    [
        (["fuzz", "--target", "nope"], "unknown target 'nope'"),
        (["fuzz", "--seconds", "0"], "--seconds must be > 0"),
        (["fuzz", "--processes", "0"], "--processes must be >= 1"),
        (["fuzz", "--database", "github-artifact://owner/repo"], "can only be read"),
        (["fuzz", "--database", "ftp://host/db"], "unknown scheme 'ftp'"),
        (["replay", "--property", "dataset/nope"], "known: dataset/matches-oracle"),
        (["replay", "--target", "known-bug:local-mean", "--property", "dataset/matches-oracle"], "no dataset interface"),
    ],
)
def test_a_bad_value_is_a_usage_error_before_any_work(arguments, names, capsys):
    with pytest.raises(SystemExit) as stopped:
        main(arguments)
    assert stopped.value.code == 2
    assert names in capsys.readouterr().err


def test_the_selection_is_the_targets_properties():
    class Args:
        target, database, property = "known-bug:local-mean", "some/dir", []

    arguments = fuzz._selected(None, Args, "read-write")
    selected = arguments[arguments.index("-k") + 1].split(" or ")
    assert "test_diffusion__window_parity" in selected and "test_training__any_run_matches" in selected
    assert not any(name.startswith("test_dataset") for name in selected)
    # The database travels in the environment: a directory among pytest's arguments would move its rootdir.
    assert "some/dir" not in arguments
    assert {"PARITY_DATABASE": "some/dir", "PARITY_DATABASE_MODE": "read-write"}.items() <= (
        fuzz.database_environment("some/dir", "read-write").items()
    )


def _fake_cli(tmp_path, body: str) -> list[str]:
    """A stand-in for ``hypothesis fuzz``: a shell that runs ``body`` after starting a child of its own
    (HypoFuzz's workers), whose pid it writes down."""
    script = tmp_path / "fake-fuzz"
    script.write_text(f"#!/bin/sh\nsleep 300 &\necho $! >> {tmp_path}/children\n{body}\n")
    script.chmod(0o755)
    return [str(script)]


def _running(pid: int) -> bool:
    """A killed child whose parent is gone may linger as a zombie: not running."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _children_alive(tmp_path) -> list[int]:
    """The children still running a moment after their round was stopped (a signal takes effect asynchronously)."""
    children = [int(pid) for pid in (tmp_path / "children").read_text().split()]
    deadline = time.monotonic() + 5
    while (alive := [pid for pid in children if _running(pid)]) and time.monotonic() < deadline:
        time.sleep(0.05)
    return alive


def test_a_round_that_outlasts_its_time_is_stopped_with_its_children(tmp_path):
    start = time.monotonic()
    with open(tmp_path / "log", "wb") as log:
        rounds = fuzz.campaign(_fake_cli(tmp_path, "sleep 300"), 0.2, log, lambda message: None)
    assert rounds == 1 and time.monotonic() - start < fuzz.STOP_GRACE_S
    assert _children_alive(tmp_path) == []


def test_a_round_that_ends_on_its_own_is_followed_by_another(tmp_path):
    with open(tmp_path / "log", "wb") as log:
        rounds = fuzz.campaign(_fake_cli(tmp_path, f"exit {fuzz.ROUND_DONE}"), 0.3, log, lambda message: None,
                               min_round_s=0.1)
    assert rounds >= 2
    assert _children_alive(tmp_path) == []


def test_a_round_that_fails_stops_the_campaign(tmp_path):
    with open(tmp_path / "log", "wb") as log, pytest.raises(fuzz.CampaignFailed, match="exit status 4"):
        fuzz.campaign(_fake_cli(tmp_path, "exit 4"), 30.0, log, lambda message: None)
    assert _children_alive(tmp_path) == []


def test_the_campaign_is_hypofuzz_on_the_nightly_profile():
    command = fuzz.fuzz_command("hypothesis", 2, ["--pyargs", "parity.suite"])
    assert command[:6] == ["hypothesis", "fuzz", "-n", "2", "--no-dashboard", "--"]
    assert command[command.index("--hypothesis-profile") + 1] == "nightly"


def test_every_property_test_asks_only_for_fixtures_a_fuzzer_can_give(request):
    """HypoFuzz runs a property test outside pytest's call, handing it each argument that a fixture pytest defines
    provides (its ``getfixturedefs``) and the item's parameters; ``request`` is no such fixture, and a test that asks
    for it never runs in a campaign (the campaign then finds nothing)."""
    from parity.suite import test_properties
    from parity.table.rows import PROPERTIES

    suite_fixtures = {"shrink_budget", "applicable"} & set(vars(test_properties))  # the suite module's own
    for prop in PROPERTIES:
        given = getattr(test_properties, prop.test_name).hypothesis.inner_test
        asked = [name for name in inspect.signature(given).parameters if name not in prop.strategies()]
        missing = [name for name in asked if name != "device"  # a parameter of the item (parametrize)
                   and name not in suite_fixtures and not request._fixturemanager.getfixturedefs(name, request.node)]  # fmt: skip
        assert not missing, f"{prop.test_name} asks for {missing}, which no fixture provides"
