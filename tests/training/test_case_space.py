"""The declared space of whole runs (``parity.trainer_space.draw_trainer_case``), read by the suite's
strategy and by the two-rank sampler alike, weighted towards runs where a wrong count can show."""

from __future__ import annotations

from hypothesis import find

from parity.cases import PUBLISHED_EPS, TrainerCase
from parity.strategies import trainer_cases
from parity.trainer_space import PUBLISHED_EPS_DOMAIN
from parity.training.diffusion.drivers.ranks import drawn_cases
from tests.training.interleavings import INTERLEAVINGS
from tests.training.shipped_trainers import OPEN_AT_ONE, OPEN_EPS
from tests.training.test_reported import EpsOfItsOwn


def can_show_a_wrong_count(case: TrainerCase) -> bool:
    """Windows of several microbatches and evaluation in several batches."""
    several_batches = 0 < case.eval_batch_size < case.examples_per_rank
    several_microbatches = case.examples_per_rank > case.train_batch_size
    return case.window_size > 1 and several_microbatches and case.evaluate and several_batches


def test_three_runs_in_four_are_drawn_where_a_wrong_count_can_show_and_the_rest_from_anywhere():
    cases = list(drawn_cases(800, seed=5, trainer_class=INTERLEAVINGS["whole-window"]).values())
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


def test_microbatches_of_several_rows_mix_rows_with_and_without_an_answer():
    """Above one row per microbatch, some rows are all prompt beside rows with an answer (the EOS rule
    per row, and a padded microbatch's count); the weighted runs keep two microbatches or more a rank."""
    cases = list(drawn_cases(200, seed=7, trainer_class=INTERLEAVINGS["whole-window"]).values())
    batched = [c for c in cases if c.train_batch_size > 1]
    assert 0.3 < len(batched) / len(cases) < 0.8
    assert any(c.prompt_only_rows for c in batched)
    assert sum(c.examples_per_rank >= 2 * c.train_batch_size for c in batched) / len(batched) > 0.7


def test_the_case_space_stays_inside_a_trainers_eps_domain():
    """The published domain draws eps = 1 (p never small); a trainer open at 1 never gets it."""
    assert any(c.eps == 1.0 for c in drawn_cases(200, seed=3, trainer_class=INTERLEAVINGS["whole-window"]).values())
    assert all(0.0 < c.eps < 1.0 for c in drawn_cases(200, seed=3, trainer_class=OPEN_EPS).values())
    assert OPEN_AT_ONE.fit(1.0) == 0.999 and str(OPEN_AT_ONE) == "(0, 1)" and 1.0 in PUBLISHED_EPS_DOMAIN
