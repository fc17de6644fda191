"""``python -m parity ddp`` speaks like the report: a progress line per case, the verdict line first,
a failing verdict in full with its diagnosis, the JSON only with ``--json``, and the report's exit
status (0 when the verdict is what the target expects)."""

from __future__ import annotations

import json

import pytest

from parity.__main__ import main

FAILING = {
    "unequal-counts": {"holds": True, "kinds": [], "notes": [], "worst": "step 0 loss: error/budget 0.31",
                       "worst_ratio": 0.31, "diagnosis": None},
    "rank-local": {"holds": False, "kinds": ["normalisation"], "notes": [], "worst_ratio": 5.2e5,
                   "diagnosis": "out = 2.000 x golden on every loss and gradient of step 0: the loss is divided by the "
                                "wrong count",
                   "worst": "[normalisation] rank 1 step 0 loss: max|out - golden| = 1.2e+00 at index [] (out 2.4, "
                            "golden 1.2) exceeds the budget 2.3e-06 = 2 x reference error 4.1e-07 + floor"},
}


@pytest.fixture
def recorded(monkeypatch):
    """``launch`` replaced by rank 0's recorded verdicts and progress lines, written where asked."""
    launched = []

    def launch(module, arguments, world_size, timeout_s):
        launched.append(arguments)
        with open(arguments[arguments.index("--progress") + 1], "w") as progress:
            progress.writelines(f"{case} ({k}/2)\n" for k, case in enumerate(FAILING, start=1))
        with open(arguments[arguments.index("--json") + 1], "w") as verdicts:
            json.dump({"target": "impl", "world_size": 2, "cases": FAILING}, verdicts)
        return ["", ""]

    monkeypatch.setattr("parity.training.launch.processes.launch", launch)
    return launched


def test_a_failing_case_is_printed_as_the_report_prints_it(recorded, capsys, tmp_path):
    assert main(["ddp", "--target", "impl"]) == 1
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert lines[0] == "parity: UNEXPECTED verdicts in impl (distributed)"
    assert lines[1].strip().startswith("impl, distributed: rank-local: out = 2.000 x golden")
    assert "[normalisation] rank 1 step 0 loss" in captured.out and "{" not in captured.out  # no JSON
    assert "[parity] ddp: impl: unequal-counts (1/2) ..." in captured.err
    assert "[parity] ddp: impl: rank-local (2/2) ..." in captured.err


def test_the_json_is_written_only_when_asked(recorded, capsys, tmp_path):
    path = tmp_path / "ddp.json"
    main(["ddp", "--target", "impl", "--json", str(path)])
    written = json.loads(path.read_text())
    assert written["scenarios"][0]["columns"][0]["failures"]["rank-local"].startswith("normalisation: out = 2.000 x golden")
    assert f"[parity] wrote {path} (json)" in capsys.readouterr().err


def test_a_known_bug_caught_on_two_ranks_is_as_expected(recorded, capsys):
    assert main(["ddp", "--target", "known-bug:local-mean"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "parity: known-bug:local-mean is caught"
