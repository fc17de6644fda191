"""A trainer target brings what it ships with (docs/trainer.md, What a target may bring).

Its arguments class (the harness fills the fields it controls), its collator (observed, and the oracle
replays what it served), its tokenizer, its eps domain; a ``ConfigDeclined`` from its ``__init__`` is a
decline. The research trainer of ``shipped_trainers.py`` holds the whole-run property in the default run
(microbatches of two rows, its EOS collator, eps 1 moved inside its domain); every shipped trainer holds
the property, the report and two ranks under ``-m long``.
"""

from __future__ import annotations

import json
import warnings

import pytest
from hypothesis import example, given
from hypothesis.errors import UnsatisfiedAssumption
from transformers import TrainingArguments

from impl.logits_trainer import LogitsDiffusionTrainer
from parity.cases import TrainerCase
from parity.report.model import Options
from parity.report.scenarios import training_scenario
from parity.table.checks.training import check_training_run
from parity.table.run_budget import fraction_of_profile
from parity.targets import ConfigDeclined, Target
from parity.training.diffusion.drivers.ranks import DDP_CASES
from parity.training.diffusion.drivers.trainer_run import run_trainer, training_arguments
from parity.training.diffusion.objectives import name_objective
from parity.training.diffusion.verdict import trainer_verdict
from parity.training.launch.processes import launch
from parity.training.shipped import ShippedTrainer, as_shipped
from tests.training.research_trainer import DiffusionArguments, ResearchDiffusionTrainer
from tests.training.shipped_trainers import RESEARCH, SHIPPED
from tests.training.test_interleavings import WHOLE_RUN

#: Two microbatches of two rows in one window, row 1 all prompt beside one with an answer, evaluation
#: in batches of two, at eps 1: outside the research trainer's (0, 1), so it runs at 0.999.
MIXED_ROWS = TrainerCase(examples_per_rank=4, train_batch_size=2, prompt_only_rows=(1,), max_length=6, eval_batch_size=2,
                         eps=1.0, data_seed=4, noise_seed=2)


def test_the_research_trainer_as_it_ships_holds_the_whole_run(tmp_path):
    record = run_trainer(RESEARCH, MIXED_ROWS, str(tmp_path))
    verdict = trainer_verdict(MIXED_ROWS, [record])
    assert verdict.holds, verdict.describe()
    assert record.eps == 0.999 and record.eps_source == "set on DiffusionArguments.time_epsilon"
    assert record.windows == [2] and record.contract.startswith("logits")
    assert all(d.batch["input_ids"].shape[0] == 2 and "attention_mask" not in d.batch for d in record.train_draws[0])
    assert name_objective(MIXED_ROWS, [record], verdict.comparisons) is None, "a correct trainer follows the published objective"


def test_registered_bare_the_research_trainer_crashes_in_its_init(tmp_path):
    """What the adapter's ShippedTrainer is for: the trainer reads its own arguments' fields."""
    record = run_trainer(ResearchDiffusionTrainer, TrainerCase(examples_per_rank=1, evaluate=False), str(tmp_path))
    assert record.crashed and "AttributeError" in record.findings[0].message and "time_epsilon" in record.findings[0].message


class DeclinesInInit(LogitsDiffusionTrainer):
    def __init__(self, *args, **kwargs):
        raise ConfigDeclined("this trainer has no evaluation loop")


def test_config_declined_in_init_is_a_decline_not_a_crash(tmp_path):
    case = TrainerCase(examples_per_rank=1)
    with pytest.raises(ConfigDeclined, match="no evaluation loop"):
        run_trainer(DeclinesInInit, case, str(tmp_path))
    with pytest.raises(UnsatisfiedAssumption), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # reject() outside a property: what the table's property does inside one
        check_training_run(DeclinesInInit, case)


def test_the_harness_fills_the_fields_it_controls_on_the_trainers_arguments_class(tmp_path):
    shipped = ShippedTrainer(ResearchDiffusionTrainer, arguments=DiffusionArguments, eps_argument="time_epsilon",
                             argument_values={"noise_schedule": "linear", "adam_beta1": 0.8})
    args = training_arguments(TrainerCase(train_batch_size=3, eps=0.25), str(tmp_path), trainer=shipped)
    assert type(args) is DiffusionArguments and (args.time_epsilon, args.noise_schedule, args.adam_beta1) == (0.25, "linear", 0.8)
    assert (args.per_device_train_batch_size, args.optim, args.seed) == (3, "sgd", 1)
    taken = ShippedTrainer(ResearchDiffusionTrainer, arguments=DiffusionArguments, argument_values={"learning_rate": 1.0})
    with pytest.raises(ValueError, match="argument_values sets learning_rate, which the harness controls"):
        training_arguments(TrainerCase(), str(tmp_path), trainer=taken)


def test_what_a_target_ships_is_checked_where_it_is_declared():
    with pytest.raises(ValueError, match="DiffusionArguments has no field time_eps"):
        ShippedTrainer(ResearchDiffusionTrainer, arguments=DiffusionArguments, eps_argument="time_eps")
    with pytest.raises(TypeError, match="TrainingArguments subclass"):
        ShippedTrainer(ResearchDiffusionTrainer, arguments=dict)
    with pytest.raises(TypeError, match="a transformers.Trainer subclass, a parity ShippedTrainer, or a factory"):
        as_shipped(TrainingArguments)
    with pytest.raises(TypeError, match="one_rank_only says why the trainer trains on one rank only, in words; got True"):
        ShippedTrainer(LogitsDiffusionTrainer, one_rank_only=True)
    assert as_shipped(lambda: RESEARCH) is RESEARCH and as_shipped(LogitsDiffusionTrainer).arguments is TrainingArguments


@pytest.mark.long
@pytest.mark.parametrize("name", SHIPPED)
def test_each_shipped_trainer_holds_the_whole_run_property(name):
    """The property's explicit examples, then a tenth of the profile's drawn runs."""

    @fraction_of_profile(0.1)
    @given(arguments=WHOLE_RUN.strategy())
    def holds(arguments):
        WHOLE_RUN.run(SHIPPED[name], arguments)

    for explicit in WHOLE_RUN.explicit_examples():
        holds = example(arguments=explicit)(holds)
    holds()


@pytest.mark.long
def test_the_report_holds_every_shipped_trainer():
    targets = [Target(name=name, description=name, expect="pass", trainer=f"tests.training.shipped_trainers:{attribute}")
               for name, attribute in (("research", "RESEARCH"), ("eos-collator", "EOS_COLLATED"), ("open-eps", "OPEN_EPS"))]
    result = training_scenario(targets, Options(), lambda _: None)
    assert all(column.holds for column in result.columns), [c.failures for c in result.columns]


@pytest.mark.long
@pytest.mark.distributed
@pytest.mark.xdist_group("distributed")
def test_every_shipped_trainer_holds_on_two_ranks(tmp_path):
    result = tmp_path / "verdicts.json"
    paths = [f"tests.training.shipped_trainers:{a}" for a in ("RESEARCH", "EOS_COLLATED", "OPEN_EPS")]
    launch("parity.training.diffusion.drivers.ranks", [*(a for p in paths for a in ("--trainer", p)), "--draw", "2", "--json", str(result)], 2,
           timeout_s=1200)
    verdicts = json.loads(result.read_text())["cases"]
    assert len(verdicts) == len(paths) * (len(DDP_CASES) + 2)
    assert all(v["holds"] for v in verdicts.values()), {k: v["worst"] for k, v in verdicts.items() if not v["holds"]}
