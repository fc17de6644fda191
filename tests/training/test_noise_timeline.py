"""The recorded generator timeline only moves forward (parity.training.diffusion.drivers.noise_replay.Timeline, docs/trainer.md,
Where a trainer may draw): a state the run returns to is found, a run that only draws is not."""

from __future__ import annotations

import torch

from parity.training.diffusion.drivers.noise_replay import Timeline


def states(*steps: str) -> list[torch.Tensor]:
    """A generator's states after each step: ``draw`` moves it on, ``seed`` re-seeds it with the run's seed."""
    generator, recorded = torch.Generator().manual_seed(0), []
    for step in steps:
        if step == "seed":
            generator.manual_seed(0)
        else:
            torch.rand(3, generator=generator)
        recorded.append(generator.get_state())
    return recorded


def test_a_run_that_only_draws_moves_forward():
    assert Timeline(states("seed", "draw", "draw", "draw")).first_return() is None


def test_a_re_seed_after_drawing_is_a_return_to_the_seeded_state():
    assert Timeline(states("seed", "draw", "draw", "seed", "draw")).first_return() == (3, 0)


def test_what_came_before_the_seeded_state_is_another_run_s():
    """A previous run may have left the generator where this one's draws pass: no return."""
    recorded = states("seed", "draw", "draw")
    assert Timeline([recorded[2], *recorded]).first_return(1) is None


def test_a_restored_state_is_a_return():
    recorded = states("seed", "draw", "draw")
    assert Timeline([*recorded, recorded[1]]).first_return() == (3, 1)
