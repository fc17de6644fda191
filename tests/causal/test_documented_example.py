"""The documented causal trainer and loop (docs/causal-lm.md, A causal trainer and a loop of your own), copied out of
the doc into a package of their own, registered through its entry points and run as a user runs them: both hold,
on one rank and two, float32 and bfloat16, summing the counts and each rank its own; the loop's rank-local twin (the
documented loop taking its own-count branch whatever the case asks: a loop written for one GPU) fails
``python -m parity ddp``, ``pytest --pyargs parity.suite`` and the report, named "rank-local"; registered
``expect="fail"``, it is named caught and never claimed as holding.

The default run installs the package and runs the documented trainer on a one-rank case whose last window is partial
(the end of an epoch) in this process; the commands launch ranks and are ``long``."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from parity.cases import CausalCase
from parity.contracts import preflight
from parity.targets import get_target, load_attribute
from parity.training.causal.drivers.causal_trainer import run_causal_trainer
from parity.training.causal.verdict import causal_verdict
from tests.installed import install_package

#: The rank-local verdict (docs/causal-lm.md, Naming the objective).
RANK_LOCAL = "each rank's sum / its own count, the ranks averaged"
REPOSITORY = Path(__file__).resolve().parents[2]
DOC = REPOSITORY / "docs" / "causal-lm.md"
#: The documented loop, planted: its own-count branch whatever the case asks.
OWN_COUNT_ALWAYS = ("if settings.average_tokens_across_devices:", "if False:  # planted: each rank its own count")
TWIN = '''
RANK_LOCAL_LOOP = Target(name="my-loop-rank-local", description="MyLoop, each rank its own count", expect="pass",
                         loop="my_causal.twin:MY_LOOP")
KNOWN_WRONG_LOOP = Target(name="my-loop-known-wrong", description="MyLoop, each rank its own count, known",
                          expect="fail", loop="my_causal.twin:MY_LOOP")
'''


def documented() -> tuple[dict[str, str], dict[str, str]]:
    """The doc's ``# my_causal/<file>`` Python blocks by file name, and the entry points its TOML block registers."""
    text = DOC.read_text()
    modules = {file: source for source, file in re.findall(r"```python\n(# my_causal/(\w+\.py)\n.*?)```", text, flags=re.S)}
    [toml] = re.findall(r"```toml\n(# your pyproject.toml[^\n]*\n\[project.entry-points.\"parity.targets\"\]\n.*?)```",
                        text, flags=re.S)
    assert "my_causal" in toml
    targets = dict(re.findall(r'^([\w-]+) = "([\w.:]+)"$', toml, flags=re.M))
    return modules, targets


def install(folder: Path) -> Path:
    """The documented package, and beside it its loop's planted twin registered twice (expected to pass, and
    ``expect="fail"``, a library its user knows is wrong)."""
    modules, targets = documented()
    assert set(modules) == {"loops.py", "trainer.py", "parity_adapter.py"} and set(targets) == {"my-loop",
                                                                                               "my-causal-trainer"}
    assert modules["loops.py"].count(OWN_COUNT_ALWAYS[0]) == 1
    modules = {**modules, "twin.py": modules["loops.py"].replace(*OWN_COUNT_ALWAYS),
               "parity_adapter.py": modules["parity_adapter.py"] + TWIN}
    targets = {**targets, "my-loop-rank-local": "my_causal.parity_adapter:RANK_LOCAL_LOOP",
               "my-loop-known-wrong": "my_causal.parity_adapter:KNOWN_WRONG_LOOP"}
    return install_package(folder, "my_causal", modules, targets)


@pytest.fixture
def installed(tmp_path, monkeypatch) -> Path:
    folder = install(tmp_path)
    monkeypatch.syspath_prepend(str(folder))
    yield folder
    for name in [name for name in sys.modules if name == "my_causal" or name.startswith("my_causal.")]:
        del sys.modules[name]


def test_the_documented_targets_register_and_the_trainer_holds_on_a_partial_last_window(installed):
    """``loop=`` names an instance and ``causal_trainer=`` a class, both pass preflight; the trainer holds where the
    last window has one microbatch of three (divided by that window's own count)."""
    loop, trainer = get_target("my-loop"), get_target("my-causal-trainer")
    assert loop.loop == "my_causal.loops:MY_LOOP" and not isinstance(loop.load("loop"), type)
    preflight(loop, 0)
    preflight(trainer, 0)
    case = CausalCase(window_size=3, steps=2, rows_per_microbatch=1, last_window=1, data_seed=4)
    record = run_causal_trainer(load_attribute(trainer.causal_trainer), case)
    assert [len(window) for window in record.windows] == [3, 1]
    verdict = causal_verdict(case, [record])
    assert verdict.holds, verdict.describe(3)


def run(folder: Path, *command: str) -> subprocess.CompletedProcess:
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(folder), str(REPOSITORY)])}
    environment.pop("PYTEST_XDIST_WORKER", None)
    return subprocess.run([sys.executable, *command], capture_output=True, text=True, cwd=folder, env=environment,
                          timeout=900)


@pytest.fixture(scope="module")
def package(tmp_path_factory) -> Path:
    return install(tmp_path_factory.mktemp("my-causal"))


@pytest.mark.long
@pytest.mark.parametrize("target", ["my-loop", "my-causal-trainer"])
def test_the_documented_targets_hold_on_every_two_rank_corner(package, target):
    """``python -m parity ddp``: both summed counts and each rank's own, a rank empty, packed bfloat16."""
    done = run(package, "-m", "parity", "ddp", "--target", target)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[0] == f"parity: {target} holds"
    corners = [line for line in done.stdout.splitlines() if line.startswith("corner ")]
    assert len(corners) == 4 and all(line.rstrip().endswith("holds") for line in corners), done.stdout
    assert "declined" not in done.stdout


@pytest.mark.long
def test_the_rank_local_twin_is_named_on_two_ranks_and_caught_where_known(package):
    done = run(package, "-m", "parity", "ddp", "--target", "my-loop-rank-local")
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.splitlines()[0] == "parity: UNEXPECTED verdicts in my-loop-rank-local (distributed)"
    assert RANK_LOCAL in done.stdout
    own = [line for line in done.stdout.splitlines() if line.startswith("corner 3: float32, own counts")]
    assert own and own[0].rstrip().endswith("holds"), "where each rank's own count is asked, the twin is right"
    known = run(package, "-m", "parity", "ddp", "--target", "my-loop-known-wrong")
    assert known.returncode == 0, known.stdout + known.stderr
    assert known.stdout.splitlines()[0] == "parity: my-loop-known-wrong is caught"


@pytest.mark.long
def test_pytest_holds_the_loop_and_names_its_twin_rank_local(package):
    """``pytest --pyargs parity.suite --parity-target T``: the causal/* properties, corners of one rank and two."""
    holds = run(package, "-m", "pytest", "-p", "no:cacheprovider", "--pyargs", "parity.suite", "--parity-target",
                "my-loop", "-k", "causal", "-q")
    assert holds.returncode == 0, holds.stdout[-3000:]
    assert re.search(r"\b1 passed\b", holds.stdout), holds.stdout[-3000:]
    twin = run(package, "-m", "pytest", "-p", "no:cacheprovider", "--pyargs", "parity.suite", "--parity-target",
               "my-loop-rank-local", "-k", "causal", "-q")
    assert twin.returncode == 1 and RANK_LOCAL in twin.stdout, twin.stdout[-3000:]


@pytest.mark.long
def test_the_report_holds_the_loop_and_names_its_twin_rank_local(package):
    """``python -m parity --target T --only causal-lm``: every corner ran (none declined), one rank and two."""
    holds = run(package, "-m", "parity", "--target", "my-loop", "--only", "causal-lm", "--examples", "1")
    assert holds.returncode == 0, holds.stdout[-3000:] + holds.stderr[-2000:]
    assert holds.stdout.splitlines()[0].startswith("parity: my-loop holds")
    assert "declined" not in holds.stdout.split("== causal-lm", 1)[1].split("\nparity:", 1)[0]
    twin = run(package, "-m", "parity", "--target", "my-loop-rank-local", "--only", "causal-lm", "--examples", "1")
    assert twin.returncode == 1, twin.stdout[-3000:]
    assert twin.stdout.splitlines()[0] == "parity: UNEXPECTED verdicts in my-loop-rank-local (causal-lm)"
    assert RANK_LOCAL in twin.stdout
