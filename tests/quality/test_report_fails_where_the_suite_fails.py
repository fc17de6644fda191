"""``python -m parity`` fails wherever the suite fails: every bug planted in tests/quality, a contributor's slip in one
class of case (tests/quality/class_bugs.py, tests/quality/corner_bugs.py), fails the suite on a corner of its record
and turns the report red in the scenario that runs that corner, the scenario named in the verdict line
(docs/report.md, Scenarios).

The default run holds the two to each other in-process, a record at a time: the record's explicit examples, run as
the suite's generated test runs them first (parity/suite/collect.py), fail on the plant; and the report's scenario
that holds the record, restricted to it (the same ``TableScenario``, the same corners), run for the plant as a target
of yours (in a child, as ``python -m parity`` runs it), makes the verdict line name that scenario. The float16
corner runs under the loss scaling the suite's float16 tests give the CPU (tests/training/test_float16.py). The
``long`` run starts ``python -m parity --target NAME ... --only SCENARIO`` itself for the plants of each scenario, the
plants installed as an adapter, and ties the plants whose corner comes after many whole runs in-process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from contextlib import nullcontext
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from parity.report.model import Options, verdict_line
from parity.report.scenarios import run_report
from parity.table.rows import PROPERTIES
from parity.table.scenario import ALL_SCENARIOS
from parity.targets import Target
from tests.installed import install_adapter

pytestmark = pytest.mark.usefixtures("harness_self_check")

REPOSITORY = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Plant:
    interface: str
    #: ``module:attribute`` of the planted interface.
    path: str
    #: The report's scenario that must name it.
    scenario: str
    #: The suite's record whose corners catch it (None: the suite's two-rank launch, tests/training/test_ddp.py).
    record: str | None
    #: A copy of impl keeps impl's promises on bad input (``Target.validates_input``).
    validates_input: bool = False

    def target(self, name: str) -> Target:
        return Target(name=f"planted-{name}", description=f"impl with a planted bug ({self.path})", expect="pass",
                      validates_input=self.validates_input, **{self.interface: self.path})


def _bugs(module: str, interface: str, scenario: str, record: str | None, *names: str, **extra) -> dict[str, Plant]:
    return {name: Plant(interface, f"tests.quality.{module}:{name}", scenario, record, **extra) for name in names}


PLANTS: dict[str, Plant] = {
    **_bugs("class_bugs", "dataset", "properties", "dataset/matches-oracle", "final_epoch_below", "final_epoch_at",
            "final_epoch_above", "epochs_from_split_count", "split_boundary_count"),
    **_bugs("corner_bugs", "dataset", "properties", "dataset/matches-oracle", "stream_end_dataset"),
    **_bugs("class_bugs", "dataset", "validation", "validation/dataset-documents", "token_at_vocab_dataset",
            validates_input=True),
    **_bugs("class_bugs", "loss", "validation", "validation/loss-arguments", "MASK_TOKEN_AT_VOCAB_LOSS"),
    **_bugs("class_bugs", "loss", "properties", "diffusion/empty-window-is-zero", "EMPTY_WINDOW_LOSS"),
    **_bugs("corner_bugs", "loss", "properties", "diffusion/window-parity", "HALF_PRECISION_COUNT_LOSS"),
    **_bugs("class_bugs", "trainer", "properties", "training/any-run-matches", "EmptyWindowTrainer"),
    **_bugs("class_bugs", "trainer", "float16", "training/any-run-matches", "NanToNumTrainer"),
    **_bugs("corner_bugs", "trainer", "properties", "training/any-run-matches", "PerMicrobatchEosLogitsTrainer",
            "HalfPrecisionCountLogitsTrainer"),
    **_bugs("corner_bugs", "trainer", "distributed", None, "RankLocalScaledLogitsTrainer"),
    **_bugs("corner_bugs", "causal_trainer", "causal-lm", "causal/trainer-follows-the-window", "UnsummedCountCausalTrainer"),
}
#: Caught only after many whole runs or windows (the last corners of their record): tied in the long run.
LATE = ("HALF_PRECISION_COUNT_LOSS", "PerMicrobatchEosLogitsTrainer", "HalfPrecisionCountLogitsTrainer",
        "UnsummedCountCausalTrainer")  # the last: caught on the two-rank corners, after every one-rank corner


def tie(name: str) -> None:
    """The suite's corners of the plant's record fail on it, and the report's scenario restricted to that record names
    the scenario in its verdict line."""
    plant = PLANTS[name]
    target = plant.target(name)
    (record,) = [prop for prop in PROPERTIES if prop.name == plant.record]
    scenario = ALL_SCENARIOS[plant.scenario]
    context, _ = scenario.run.around("cpu") if scenario.run.around else (nullcontext(), "")
    with context:
        suite = record.hunt(target.load(plant.interface), max_examples=1, shrink=False, drawn=False,
                            corners=scenario.run.corners, target=target)
    assert suite.found or suite.crash, f"the suite's corners of {record.name} hold on {name}"
    restricted = replace(scenario, run=replace(scenario.run, records=lambda t: [record] if record.applies_to(t) else []))
    results = run_report([target], Options(examples=1, under_test=(target.name,)), [plant.scenario], lambda line: None,
                         {plant.scenario: restricted})
    assert verdict_line(results) == f"parity: UNEXPECTED verdicts in {target.name} ({plant.scenario})", results


@pytest.mark.parametrize("name", [name for name, plant in PLANTS.items() if plant.record and name not in LATE])
def test_the_report_fails_where_the_suite_fails(name):
    tie(name)


@pytest.mark.long  # each a training run or a window of thousands of tokens after the record's other corners
@pytest.mark.parametrize("name", LATE)
def test_the_report_fails_where_the_suite_fails_late_in_the_record(name):
    tie(name)


def test_every_planted_bug_is_held_to_the_report():
    """Every planted interface of the two modules is a plant here, so a new one cannot skip the tie."""
    import tests.quality.class_bugs as class_bugs
    import tests.quality.corner_bugs as corner_bugs

    for module in (class_bugs, corner_bugs):
        planted = {name for name in module.__doc__.split("``") if name.isidentifier() and hasattr(module, name)}
        assert planted <= set(PLANTS), sorted(planted - set(PLANTS))


ADAPTER = "from parity.targets import Target\n\n" + "".join(
    f"{name} = Target(name={plant.target(name).name!r}, description='a planted bug', expect='pass', "
    f"validates_input={plant.validates_input}, {plant.interface}={plant.path!r})\n"
    for name, plant in PLANTS.items()
)


@pytest.mark.long  # a fresh interpreter per scenario, running it for every plant of the scenario and the controls
@pytest.mark.parametrize("scenario", sorted({plant.scenario for plant in PLANTS.values()}))
def test_python_m_parity_exits_1_naming_the_scenario(scenario, tmp_path):
    """Each plant of the scenario a ``--target`` of one run (the controls run once): every one UNEXPECTED in it, so
    each alone would end the run with exit 1 and the scenario named."""
    install_adapter(tmp_path, "planted_adapter", textwrap.dedent(ADAPTER),
                    {plant.target(name).name: f"planted_adapter:{name}" for name, plant in PLANTS.items()})
    planted = [plant.target(name).name for name, plant in PLANTS.items() if plant.scenario == scenario]
    out = tmp_path / "report.json"
    result = subprocess.run(
        [sys.executable, "-m", "parity", *(a for name in planted for a in ("--target", name)), "--only", scenario,
         "--quiet", "--json", str(out)],
        cwd=REPOSITORY, capture_output=True, text=True, timeout=280,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPOSITORY)])},
    )
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr[-3000:]
    said = " ".join(result.stdout.split())  # the verdict line wraps at 120 columns
    assert said.startswith("parity: UNEXPECTED verdicts in " + "; ".join(f"{name} ({scenario})" for name in planted))
    (ran,) = json.loads(out.read_text())["scenarios"]
    assert all(ran["verdicts"][name].endswith("(UNEXPECTED)") for name in planted), ran["verdicts"]
