"""A failing verdict says what is wrong in one sentence (``Verdict.diagnosis``): where no run names
the objective, the measured factor of out on golden over the losses and gradients of the first
failing step; ``ParityFailure`` and the report lead with it."""

from __future__ import annotations

import torch

from parity.budget import compare_states, compare_tensor
from parity.compare import Finding, ParityFailure, judge


def step(factors: dict[str, float], step_number: int = 0, seed: int = 0):
    """A loss and two gradients of one step whose outs are ``factor`` x the golden."""
    generator = torch.Generator().manual_seed(seed)
    golden = {name: torch.randn(4, 3, generator=generator, dtype=torch.float64) for name in ("a", "b")}
    out = {name: (tensor * factors[name]).float() for name, tensor in golden.items()}
    refs = [{name: tensor.float() for name, tensor in golden.items()}]
    loss = torch.tensor(2.0, dtype=torch.float64)
    return [
        compare_tensor("loss", (loss * factors["loss"]).float(), [loss.float()], loss, step=step_number, quantity="loss"),
        *compare_states(out, refs, golden, step=step_number, quantity="grad"),
    ]


def test_one_factor_on_every_tensor_is_a_wrong_count():
    verdict = judge([*step({"loss": 0.5, "a": 0.5, "b": 0.5}), *step({"loss": 1, "a": 1, "b": 1}, 1)])
    said = "out = 0.500 x golden on every loss and gradient of step 0: the loss is divided by the wrong count"
    assert verdict.diagnosis == said
    assert str(ParityFailure(verdict)).startswith(f"normalisation: {verdict.diagnosis}\n[normalisation] ")


def test_factors_that_differ_are_terms_weighted_unequally():
    verdict = judge(step({"loss": 1.2, "a": 0.8, "b": 1.25}, 2))
    assert verdict.diagnosis.startswith("out = 0.800 to 1.250 x golden over every loss and gradient of step 2: not one factor")


def test_the_diagnosis_counts_the_tensors_that_fail():
    verdict = judge(step({"loss": 1.0, "a": 0.5, "b": 0.5}))
    assert verdict.diagnosis.startswith("out = 0.500 x golden on 2 of 3 losses and gradients of step 0")


def test_a_finding_is_its_own_diagnosis_and_a_named_one_is_kept():
    found = judge([], [Finding("noise", "the masks differ from the published noising\nat row 3")])
    assert found.diagnosis == "the masks differ from the published noising"
    named = judge(step({"loss": 0.5, "a": 0.5, "b": 0.5}), diagnosis="the trainer computes mean_g(S_g / N_g)")
    assert named.diagnosis == "the trainer computes mean_g(S_g / N_g)"
    assert judge(step({"loss": 1, "a": 1, "b": 1})).diagnosis is None
