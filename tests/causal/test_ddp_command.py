"""``python -m parity ddp --target T`` for a causal-LM target (a loop or a causal trainer of a user's): the two-rank
corners, each a cell, the verdict line first, the exit status the report's (docs/report.md, ``python -m parity
ddp``; docs/causal-lm.md, Two ranks in a session). The records are the session's one causal launch's
(``CAUSAL_SESSION``, which the default run pays once for these subjects): the command's own launch is the same
``run_cases_on_ranks``, run for real by tests/causal/test_documented_example.py (``long``)."""

from __future__ import annotations

import json

import pytest

import parity.cli.commands
from parity.__main__ import main
from parity.strategies.causal import TWO_RANK_CORNERS
from parity.targets import Target
from parity.training.launch.session import CAUSAL_SESSION, NotOnTwoRanks, machine_misfit
from tests.causal.conftest import SESSION_SUBJECTS

pytestmark = [pytest.mark.distributed, pytest.mark.xdist_group("distributed")]

#: The rank-local verdict (docs/causal-lm.md, Naming the objective).
RANK_LOCAL = "each rank's sum / its own count, the ranks averaged"
TARGETS = {
    "my-loop": Target(name="my-loop", description="a per-token loop", expect="pass", loop=SESSION_SUBJECTS["PER_TOKEN"]),
    "their-loop": Target(name="their-loop", description="each rank its own count", expect="pass",
                         loop=SESSION_SUBJECTS["RANK_LOCAL"]),
    "their-known-loop": Target(name="their-known-loop", description="each rank its own count, known", expect="fail",
                               loop=SESSION_SUBJECTS["RANK_LOCAL"]),
    "their-trainer": Target(name="their-trainer", description="a count never summed over the ranks", expect="pass",
                            causal_trainer=SESSION_SUBJECTS["UNSUMMED"]),
}


@pytest.fixture
def session_launch(monkeypatch):
    """The command's launch answered from the session's: every subject's records on every corner (why, declined)."""
    if misfit := machine_misfit():
        pytest.skip(misfit)
    CAUSAL_SESSION.judge(*SESSION_SUBJECTS.values())
    found = {}
    for path in SESSION_SUBJECTS.values():  # read before the launch is replaced: the session launches through it
        for case in TWO_RANK_CORNERS:
            try:
                found[path, case] = CAUSAL_SESSION.records(path, case)
            except NotOnTwoRanks as why:
                found[path, case] = str(why)

    def from_session(driver, subjects, cases, timeout_s=None):
        return [[found[path, case] for case in cases] for path in subjects]

    monkeypatch.setattr("parity.training.causal.drivers.ranks.run_cases_on_ranks", from_session)
    real = parity.cli.commands.get_target
    monkeypatch.setattr(parity.cli.commands, "get_target", lambda name: TARGETS.get(name) or real(name))


def cells(out: str) -> dict[str, str]:
    """The table's ``corner k: ...`` rows (a row name wrapping onto a second line keeps its first), by corner."""
    return {line.split(":", 1)[0]: line.rstrip() for line in out.splitlines() if line.startswith("corner ")}


def test_a_loop_that_holds_exits_0_on_every_corner(session_launch, capsys, tmp_path):
    written = tmp_path / "ddp.json"
    assert main(["ddp", "--target", "my-loop", "--json", str(written)]) == 0
    captured = capsys.readouterr()
    assert captured.out.splitlines()[0] == "parity: my-loop holds"
    assert len(cells(captured.out)) == 4 and all(c.endswith("holds") for c in cells(captured.out).values()), captured.out
    assert "ddp: my-loop: 4 two-rank corners in one launch" in captured.err
    [column] = json.loads(written.read_text())["scenarios"][0]["columns"]
    assert column["name"] == "my-loop" and column["holds"] is True


def test_a_rank_local_loop_exits_1_named_and_caught_when_known(session_launch, capsys):
    assert main(["ddp", "--target", "their-loop"]) == 1
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "parity: UNEXPECTED verdicts in their-loop (distributed)"
    assert RANK_LOCAL in out.splitlines()[1], out  # the diagnosis under the verdict line
    corners = cells(out)
    assert "FAILS" in corners["corner 1"] and corners["corner 3"].endswith("holds"), corners  # own counts asked: right
    assert main(["ddp", "--target", "their-known-loop"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "parity: their-known-loop is caught"


def test_a_causal_trainer_whose_count_is_never_summed_fails_where_both_ranks_supervise(session_launch, capsys):
    assert main(["ddp", "--target", "their-trainer"]) == 1
    corners = cells(capsys.readouterr().out)
    assert "FAILS" in corners["corner 1"] and corners["corner 2"].endswith("holds"), corners  # rank 1 empty: equal


def test_drawn_cases_are_refused_for_a_causal_target_before_any_work(monkeypatch, capsys):
    monkeypatch.setattr(parity.cli.commands, "get_target", lambda name: TARGETS[name])
    with pytest.raises(SystemExit) as refused:
        main(["ddp", "--target", "my-loop", "--draw", "2"])
    assert refused.value.code == 2
    assert "a causal-LM target runs the two-rank corners" in capsys.readouterr().err
