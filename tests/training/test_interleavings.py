"""A correct trainer is never called wrong for where it draws its noise (docs/trainer.md, Where a trainer may draw).

Each interleaving of ``interleavings.py`` holds the table's whole-run property (``training/any-run-matches``,
the check the suite runs on every target) on a run with several microbatches per window and several
rows per evaluation batch; a few drawn runs go to interleavings drawn at random, and under the
nightly profile each interleaving gets the property's whole share of the profile. Each noise bug of
``noise_bugs.py`` is named noise on the property's explicit examples.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from parity.cases import TrainerCase
from parity.compare import ParityFailure
from parity.table.rows import PROPERTIES
from parity.table.run_budget import fraction_of_profile
from parity.training.diffusion.drivers.ranks import DDP_CASES
from parity.training.launch.processes import launch
from tests.training.interleavings import INTERLEAVINGS
from tests.training.noise_bugs import NOISE_BUGS

(WHOLE_RUN,) = [prop for prop in PROPERTIES if prop.name == "training/any-run-matches"]
#: Windows 2 and 1, evaluation batches of 2 and 1 rows, a middling eps: every draw point is exercised.
SMALL_RUN = TrainerCase(examples_per_rank=3, max_length=6, eval_batch_size=2, eps=0.05, data_seed=2, noise_seed=5)
#: A fetch-then-draw run where a later batch's state explains forward 0 by coincidence (none of its
#: maskable tokens masked): a greedy, newest-first replay called it noise (docs/trainer.md).
COINCIDENCE_RUN = TrainerCase(examples_per_rank=5, max_length=2, data_seed=9234, noise_seed=10909, model_seed=3, evaluate=False)


@pytest.mark.parametrize("name", [name for name in INTERLEAVINGS if name != "whole-window"])
def test_each_interleaving_holds_the_whole_run_property(name):
    """(The whole window drawn at once is the logits trainer's own: tests/training/test_logits_trainer.py.)"""
    assert WHOLE_RUN.run(INTERLEAVINGS[name], {"case": SMALL_RUN}) == []


def test_a_coincidental_state_does_not_hide_the_real_draws():
    assert WHOLE_RUN.run(INTERLEAVINGS["fetch-then-draw"], {"case": COINCIDENCE_RUN}) == []


@fraction_of_profile(0.12)
@given(name=st.sampled_from(sorted(INTERLEAVINGS)), arguments=WHOLE_RUN.strategy())
def test_any_interleaving_holds_the_property_on_any_run(name, arguments):
    WHOLE_RUN.run(INTERLEAVINGS[name], arguments)


@pytest.mark.parametrize("name", INTERLEAVINGS)
def test_the_property_holds_over_its_share_of_the_nightly_profile(name, record_property):
    """300 whole runs under the nightly profile (the property's fraction of its 1000 examples)."""
    if settings.default.max_examples < 1000:
        pytest.skip("the property's full share of examples: nightly profile")
    runs = []

    @fraction_of_profile(WHOLE_RUN.examples_fraction)
    @given(arguments=WHOLE_RUN.strategy())
    def holds(arguments):
        WHOLE_RUN.run(INTERLEAVINGS[name], arguments)
        runs.append(arguments["case"])

    holds()
    record_property("whole runs held", len(runs))
    print(f"\n{name}: {len(runs)} whole runs held; {sum(c.window_size > 1 and c.examples_per_rank > 1 for c in runs)} "
          f"with several microbatches in a window; {sum(c.evaluate for c in runs)} evaluated")


@pytest.mark.parametrize("name", NOISE_BUGS)
def test_each_noise_bug_is_named_noise(name):
    with pytest.raises(ParityFailure, match=r"^noise:"):
        for example in WHOLE_RUN.explicit_examples():
            WHOLE_RUN.run(NOISE_BUGS[name], example)


@pytest.mark.distributed
@pytest.mark.xdist_group("distributed")
def test_every_interleaving_holds_on_two_ranks(tmp_path):
    """The two-rank cases (ranks seeded alike and apart) and two drawn ones, for every interleaving
    in one launch (nightly profile: about 30 cases)."""
    if settings.default.max_examples < 1000:
        pytest.skip("every interleaving on every two-rank case: nightly profile (the default run's are in test_ddp.py)")
    result = tmp_path / "verdicts.json"
    trainers = [f"{cls.__module__}:{cls.__name__}" for cls in INTERLEAVINGS.values()]
    arguments = [*(a for trainer in trainers for a in ("--trainer", trainer)), "--draw", "2", "--json", str(result)]
    launch("parity.training.diffusion.drivers.ranks", arguments, 2, timeout_s=1800)
    verdicts = json.loads(result.read_text())["cases"]
    assert len(verdicts) == len(trainers) * (len(DDP_CASES) + 2)
    assert all(v["holds"] for v in verdicts.values()), {k: v["worst"] for k, v in verdicts.items() if not v["holds"]}
