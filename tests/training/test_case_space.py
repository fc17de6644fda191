"""The declared space of whole runs (``parity.cases.draw_trainer_case``), read by the suite's
strategy and by the two-rank sampler alike, weighted towards runs where a wrong count can show."""

from __future__ import annotations

from hypothesis import find

from parity.cases import PUBLISHED_EPS, TrainerCase
from parity.strategies import trainer_cases
from parity.training.ddp_cases import drawn_cases
from tests.training.interleavings import INTERLEAVINGS
from tests.training.test_reported import EpsOfItsOwn


def can_show_a_wrong_count(case: TrainerCase) -> bool:
    """Windows of several microbatches and evaluation in several batches."""
    several_batches = 0 < case.eval_batch_size < case.examples_per_rank
    return case.window_size > 1 and case.examples_per_rank > 1 and case.evaluate and several_batches


def test_three_runs_in_four_are_drawn_where_a_wrong_count_can_show_and_the_rest_from_anywhere():
    cases = list(drawn_cases(400, seed=5, trainer_class=INTERLEAVINGS["whole-window"]).values())
    share = sum(map(can_show_a_wrong_count, cases)) / len(cases)
    assert 0.75 <= share < 0.9, share
    assert any(c.window_size == 1 for c in cases) and any(c.examples_per_rank == 1 for c in cases)
    assert any(not c.evaluate for c in cases) and any(c.eval_batch_size == 0 for c in cases)


def test_the_suites_strategy_shrinks_to_the_simplest_run_that_can_show_a_wrong_count():
    simplest = find(trainer_cases(), lambda case: True)
    assert can_show_a_wrong_count(simplest) and simplest.eps == PUBLISHED_EPS
    assert (simplest.examples_per_rank, simplest.window_size, simplest.eval_batch_size) == (2, 2, 1)


def test_the_two_rank_sampler_skips_what_the_eps_rule_declines():
    assert {case.eps for case in drawn_cases(20, seed=1, trainer_class=EpsOfItsOwn).values()} == {PUBLISHED_EPS}
