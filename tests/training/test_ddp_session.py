"""A target of yours on two ranks (``parity.training.launch.session``): the session's launch trains it, or its
distributed tests skip naming why, never a missing key.

The default run checks the lookups without a launch: a target without a trainer, one whose trainer declares one
rank only, a machine where two ranks do not fit, a lone trainer's verdicts keyed by the case alone. The ``long``
run installs a third party's package as a distribution (``tests/installed.py``): the documented trainer
(docs/trainer.md, A trainer of your own) and a twin of it written for one GPU, which divides by its own rank's
count where ``average_tokens_across_devices=True`` asks for every rank's, registered through the
``parity.targets`` entry points. It runs ``tests/training/test_ddp.py`` on each in a pytest of its own, as a
project's CI would: the correct one, named by the ini option ``parity_target``, passes on two ranks, the twin fails with the rank-local verdict, and the
same trainer declaring one rank only skips naming why.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from parity.targets import Target, get_target
from parity.training.diffusion.drivers.ranks import DDP_CASES
from parity.training.diffusion.objectives import alternatives
from parity.training.launch import session as ddp_session
from parity.training.launch.session import NotOnTwoRanks, launch_trainers
from tests.installed import install_adapter
from tests.training.test_readme_trainer import documented_source

REPOSITORY = Path(__file__).resolve().parents[2]
ONE_RANK = Target(name="one-rank", description="declares one rank", expect="pass",
                  trainer="tests.training.shipped_trainers:ONE_RANK")
NO_TRAINER = Target(name="no-trainer", description="a dataset only", expect="pass", dataset="parity.dataset.impl:impl_dataset")
LOGITS = get_target("logits")
RIDING = "tests.training.interleavings:FetchThenDrawTrainer"


def _no_launch(*args, **kwargs):
    raise AssertionError("launched, where nothing could be in the launch")


def test_a_target_that_cannot_train_on_two_ranks_is_left_out_naming_why(monkeypatch):
    monkeypatch.setattr(ddp_session, "launch", _no_launch)
    launched = launch_trainers([ONE_RANK, NO_TRAINER], arguments=["--also", f"rank-local={RIDING}"])
    with pytest.raises(NotOnTwoRanks, match=r"^target 'one-rank' trains on one rank only, as its ShippedTrainer "
                                            r"declares: a research loop written for one GPU$"):
        launched.case("one-rank", "unequal-counts")
    with pytest.raises(NotOnTwoRanks, match=r"^target 'no-trainer' has no trainer interface$"):
        launched.of("no-trainer")
    with pytest.raises(NotOnTwoRanks, match="one rank only.*; target 'no-trainer' has no trainer"):
        launched.of(RIDING)  # what would have ridden along names the targets' reasons


def test_where_two_ranks_do_not_fit_the_machine_nothing_is_launched(monkeypatch):
    monkeypatch.setattr(ddp_session, "launch", _no_launch)
    monkeypatch.setattr(os, "cpu_count", lambda: 1)
    with pytest.raises(NotOnTwoRanks, match=r"^2 ranks do not fit this machine: Gloo gives each rank a CPU core, and it has 1$"):
        launch_trainers([LOGITS]).case("logits", "unequal-counts")


def _fake_launch(keys: list[str]):
    """``launch`` writing ``ddp_cases``'s JSON with ``keys``, each verdict holding, as the ranks would."""
    def launch(module, arguments, world_size, timeout_s=None):
        verdicts = {key: {"holds": True, "kinds": []} for key in keys}
        Path(arguments[arguments.index("--json") + 1]).write_text(json.dumps({"cases": verdicts}))
        return ["", ""]
    return launch


def test_a_lone_trainer_is_found_under_its_name(monkeypatch):
    """``ddp_cases`` keys a lone trainer's cases by the case alone, and what rides along by its path."""
    monkeypatch.setattr(ddp_session, "launch", _fake_launch([*DDP_CASES, f"{RIDING} rank-local"]))
    launched = launch_trainers([LOGITS], arguments=["--also", f"rank-local={RIDING}"])
    assert set(launched.of("logits")) == set(DDP_CASES) and launched.case(RIDING, "rank-local")["holds"]
    with pytest.raises(NotOnTwoRanks, match=r"^mine is not in this session's two-rank launch$"):
        launched.of("mine")


#: A third party's package: the documented trainer as a user copies it, a twin written for one GPU, the same
#: trainer declaring one rank only, and their targets.
THEIRS = documented_source() + '''

class OneGpuTrainer(MyDiffusionTrainer):
    """Written for one GPU: each rank divides by its own window's count, whatever average_tokens_across_devices asks."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.args.average_tokens_across_devices = False


# my_pkg/parity_adapter.py
from parity.targets import Target
from parity.training.shipped import ShippedTrainer

ONE_RANK = ShippedTrainer(MyDiffusionTrainer, one_rank_only="our cluster trains it on one GPU")
CORRECT = Target(name="theirs", description="MyDiffusionTrainer", expect="pass", trainer="their_trainers:MyDiffusionTrainer")
ONE_GPU = Target(name="theirs-one-gpu", description="OneGpuTrainer", expect="fail", trainer="their_trainers:OneGpuTrainer")
DECLARED = Target(name="theirs-one-rank", description="one rank only", expect="pass", trainer="their_trainers:ONE_RANK")
'''


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    return install_adapter(tmp_path_factory.mktemp("their-site"), "their_trainers", THEIRS, {
        "theirs": "their_trainers:CORRECT", "theirs-one-gpu": "their_trainers:ONE_GPU",
        "theirs-one-rank": "their_trainers:DECLARED"})


def their_ci(site: Path, *selection: str) -> subprocess.CompletedProcess:
    """``pytest tests/training/test_ddp.py`` in a clone, the distribution installed, the target selected by
    ``selection`` (``--target NAME``, or the ini option a project would set)."""
    environment = {key: value for key, value in os.environ.items() if not key.startswith("PYTEST_")}
    environment["PYTHONPATH"] = str(site)
    return subprocess.run([sys.executable, "-m", "pytest", "-vv", "-rfs", "-p", "no:cacheprovider",  # past addopts' -q
                           "tests/training/test_ddp.py", *selection],
                          cwd=REPOSITORY, env=environment, capture_output=True, text=True, timeout=600)


@pytest.mark.long
@pytest.mark.distributed
@pytest.mark.xdist_group("distributed")
def test_a_correct_trainer_of_another_distribution_passes_on_two_ranks(installed):
    result = their_ci(installed, "-o", "parity_target=theirs")  # as the project's ini names it
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert all(f"test_every_rank_matches_the_reference[{case}] PASSED" in result.stdout for case in DDP_CASES), result.stdout


@pytest.mark.long
@pytest.mark.distributed
@pytest.mark.xdist_group("distributed")
def test_its_one_gpu_twin_fails_with_the_rank_local_verdict(installed):
    result = their_ci(installed, "--target", "theirs-one-gpu")
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr[-3000:]
    (rank_local,) = [o for o in alternatives(DDP_CASES["unequal-counts"], 2) if o.name == "rank-local"]
    assert "FAILED tests/training/test_ddp.py::test_every_rank_matches_the_reference[unequal-counts]" in result.stdout
    assert f"theirs-one-gpu: normalisation: this trainer computes {rank_local.words}" in result.stdout, result.stdout[-3000:]


@pytest.mark.long
@pytest.mark.distributed  # its session still launches the harness's own rank checks
@pytest.mark.xdist_group("distributed")
def test_the_same_trainer_declaring_one_rank_skips_naming_why(installed):
    result = their_ci(installed, "--target", "theirs-one-rank")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert (f"SKIPPED [{len(DDP_CASES)}] tests/training/test_ddp.py" in result.stdout and "target 'theirs-one-rank' trains on "
            "one rank only, as its ShippedTrainer declares: our cluster trains it on one GPU" in result.stdout), result.stdout
