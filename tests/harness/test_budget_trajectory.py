"""The in-order reference along the target's trajectory (docs/budget.md, The reference error): written
once (``parity.budget.along_trajectory``) for window runs and whole runs; a wrong count still fails
where it first shows."""

from __future__ import annotations

import torch
from torch import nn

from oracle.window_reference import StepResult
from parity.budget import along_trajectory, before_each
from parity.cases import WindowCase
from parity.compare import judge
from parity.targets import get_target
from parity.training.diffusion.drivers.window_cases import model_builder, parity_run
from parity.training.diffusion.drivers.window_run import reference_steps


def test_step_k_starts_where_the_target_was_before_step_k():
    model = nn.Linear(2, 1, bias=False)
    nn.init.constant_(model.weight, 0.5)  # exact sums below
    seeded = model.weight.detach().clone()
    # The target's steps: its parameters after each.
    target = [StepResult(torch.zeros(()), {}, {"weight": torch.full((1, 2), float(k + 1))}) for k in range(3)]

    def step(m, k, window):
        started = m.weight.detach().clone()
        with torch.no_grad():
            m.weight.add_(window)  # the oracle's own step
        return started

    own = along_trajectory(model, [10.0, 20.0, 30.0], step, [None] * 3)
    assert [s.tolist() for s in own] == [seeded.tolist(), (seeded + 10).tolist(), (seeded + 30).tolist()]
    model.weight.data.copy_(seeded)
    trajectory = along_trajectory(model, [10.0, 20.0, 30.0], step, before_each(target))
    assert torch.equal(trajectory[0], seeded), "step 0 starts from the seeded weights, as the target does"
    assert [s.tolist() for s in trajectory[1:]] == [[[1.0, 1.0]], [[2.0, 2.0]]]


def test_a_wrong_count_still_fails_where_it_first_shows():
    """The local-mean bug in a run of three windows: step 0, judged against the oracle's own step
    from the seeded weights, already fails as a normalisation bug."""
    case = WindowCase(
        window_sizes=(2, 2, 1), rows_per_microbatch=1, length=6, batch_kinds=(("answer",),) * 5, with_labels=True,
        with_attention_mask=True, data_seed=16, noise_seed=16, eps=1e-3, dtype=torch.float32, frozen_head=False,
    )
    run = parity_run(get_target("known-bug:local-mean").load("loss"), case)
    along, _reversed = run.refs
    own = reference_steps(model_builder(case)(), run.draws[:1], case.lr)
    assert torch.equal(along[0].loss, own[0].loss), "step 0 of the in-order reference starts from the seeded weights"
    assert all(torch.equal(along[0].grads[name], grad) for name, grad in own[0].grads.items())
    verdict = judge(run.comparisons())
    assert min(c.step for c in verdict.failures) == 0 and "normalisation" in verdict.failure_kinds
