"""A normalisation failure names the objective the trainer computes (docs/trainer.md, Naming the objective).

Each twin of ``objective_twins.py`` is caught with ``normalisation`` and its diagnosis names its
objective; a correct trainer's run follows the published one, so the diagnosis never fires on it. The
default run names the issue's trainer (supervised tokens, summed; ``test_input_contract.py``) and the
local-mean twins (``tests/quality/test_finds_trainer_bug.py``); ``-m long`` every twin, and every
correct trainer on drawn runs.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, reject

from impl.trainer import WindowedDiffusionTrainer
from parity.cases import TrainerCase
from parity.compare import ParityFailure
from parity.devices import runs_on
from parity.table.run_budget import fraction_of_profile
from parity.targets import ConfigDeclined
from parity.training.diffusion.drivers.trainer_run import run_trainer
from parity.training.diffusion.objectives import alternatives, name_objective
from parity.training.diffusion.verdict import trainer_verdict
from parity.training.launch.processes import launch
from tests.training.interleavings import INTERLEAVINGS
from tests.training.objective_twins import TWINS, TWO_RANK_TWINS
from tests.training.shipped_trainers import SHIPPED
from tests.training.test_interleavings import WHOLE_RUN
from tests.training.variants import ChunkedCETrainer, FusedHeadTrainer, ReorderedSumTrainer

#: Two windows of two microbatches of two rows (rows 1 and 6 all prompt), realizing masked counts 8, 4
#: and 4, 0 beside supervised tokens 10, 2 and 5, 3: every known objective is its own on this run.
TELLS_OBJECTIVES_APART = TrainerCase(examples_per_rank=8, train_batch_size=2, window_size=2, prompt_only_rows=(1, 6),
                                     max_length=10, eps=0.05, evaluate=False, data_seed=5, noise_seed=5)


def words(name: str, world: int = 1) -> str:
    (objective,) = [o for o in alternatives(TELLS_OBJECTIVES_APART, world) if o.name == name]
    return objective.words


def diagnosis_of(trainer, case: TrainerCase, folder: str) -> str | None:
    verdict = trainer_verdict(case, [run_trainer(trainer, case, folder)])
    assert "normalisation" in verdict.failure_kinds, verdict.describe()
    assert str(ParityFailure(verdict)).startswith(f"normalisation: {verdict.diagnosis}\n"), "the diagnosis leads the message"
    return verdict.diagnosis


@pytest.mark.long
@pytest.mark.parametrize("name", TWINS)
def test_each_twin_is_named(name, tmp_path):
    diagnosis = diagnosis_of(TWINS[name], TELLS_OBJECTIVES_APART, str(tmp_path))
    assert diagnosis.startswith(f"this trainer computes {words(name)}"), diagnosis


@pytest.mark.long
@pytest.mark.distributed
@pytest.mark.xdist_group("distributed")
def test_the_rank_local_twin_is_named_on_two_ranks(tmp_path):
    result = tmp_path / "verdicts.json"
    (trainer,) = TWO_RANK_TWINS.values()
    launch("parity.training.diffusion.drivers.ranks", ["--trainer", f"{trainer.__module__}:{trainer.__name__}", "--case", "unequal-counts",
                                "--json", str(result)], 2, timeout_s=600)
    (verdict,) = json.loads(result.read_text())["cases"].values()
    assert "normalisation" in verdict["kinds"]
    assert verdict["diagnosis"].startswith(f"this trainer computes {words('rank-local', 2)}")


CORRECT = {
    "impl": WindowedDiffusionTrainer,
    **{f"interleaving {name}": trainer for name, trainer in INTERLEAVINGS.items()},
    **{f"variant {trainer.__name__}": trainer for trainer in (ChunkedCETrainer, ReorderedSumTrainer, FusedHeadTrainer)},
    **{f"shipped {name}": trainer for name, trainer in SHIPPED.items()},
}


@pytest.mark.long
@pytest.mark.parametrize("name", CORRECT)
def test_the_diagnosis_never_fires_on_a_correct_trainer(name, tmp_path_factory):
    """On drawn runs of every correct trainer: the logged losses and gradients follow the published objective."""

    @fraction_of_profile(0.04)
    @given(arguments=WHOLE_RUN.strategy())
    def follows_the_published_objective(arguments):
        case = arguments["case"]
        if not runs_on(case.dtype, "cpu"):
            reject()
        try:
            record = run_trainer(CORRECT[name], case, str(tmp_path_factory.mktemp("run")))
        except ConfigDeclined:
            reject()
        verdict = trainer_verdict(case, [record])
        assert verdict.holds, verdict.describe()
        if record.steps:
            assert name_objective(case, [record], verdict.comparisons) is None

    follows_the_published_objective()
