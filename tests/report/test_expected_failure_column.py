"""A target of a user's registered ``expect="fail"`` (a library they know is wrong, that no record lists as a bug it
must catch) gets its column in every scenario whose interface it has, named, its verdict ``caught`` where it
failed; the report's first line never claims a column that did not run (docs/report.md, Scenarios: causal-lm)."""

from __future__ import annotations

import json


import parity.cli.report
from parity.__main__ import main
from parity.report.model import Column, ScenarioResult, verdict_line
from parity.table.scenario import causal_scenario, properties_scenario
from parity.targets import Target

#: impl's pre-fix causal trainer (per-microbatch means), as a user registers a wrong library of theirs.
THEIRS = Target(name="their-trainer", description="per-microbatch means, known", expect="fail",
                causal_trainer="impl.known_bugs.causal_local_mean_trainer:CausalLocalMeanTrainer")


def test_every_scenario_of_its_interface_gives_it_records():
    assert [r.name for r in causal_scenario.records_for(THEIRS)] == [r.name for r in causal_scenario.records(THEIRS)]
    assert causal_scenario.records(THEIRS), "the causal-lm scenario has records for a causal trainer"
    assert properties_scenario.records_for(THEIRS) == properties_scenario.records(THEIRS)


def test_the_verdict_line_claims_no_column_that_did_not_run():
    result = ScenarioResult("causal-lm", "t", "b")
    assert verdict_line([result]) == "parity: no column of the targets under test ran"
    result.columns.append(Column("impl", "pass", True, {}, control=True))
    assert verdict_line([result]) == "parity: no column of the targets under test ran; the controls are as expected"
    result.columns.append(Column("their-trainer", "fail", True, {}))  # expected to fail, and it held
    assert verdict_line([result]) == "parity: UNEXPECTED verdicts in their-trainer (causal-lm)"


def test_the_report_shows_the_column_named_and_caught(monkeypatch, capsys, tmp_path):
    """Through ``python -m parity --target their-trainer --only causal-lm`` (the controls left out: they are the
    shipped targets' own columns, judged elsewhere): caught at the first corner, exit 0, and the verdict line says
    caught, never that every column holds."""
    real = parity.cli.report.get_target
    monkeypatch.setattr(parity.cli.report, "get_target", lambda name: THEIRS if name == THEIRS.name else real(name))
    monkeypatch.setattr(parity.cli.report, "default_targets", dict)
    written = tmp_path / "report.json"
    assert main(["--target", "their-trainer", "--only", "causal-lm", "--quiet", "--json", str(written)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "parity: their-trainer is caught", out
    assert "holds" not in out.splitlines()[0]
    [scenario] = json.loads(written.read_text())["scenarios"]
    [column] = scenario["columns"]
    assert scenario["name"] == "causal-lm" and column["name"] == "their-trainer" and column["holds"] is False
    assert "per-microbatch means" in json.dumps(column)
