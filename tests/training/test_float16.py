"""float16 as production trains it: ``TrainingArguments(fp16=True)``, autocast over float32 weights with
accelerate's dynamic loss scaling (docs/budget.md, float16).

accelerate scales the loss on GPUs only, so float16 is refused on the CPU, naming the device; here the
runs go through ``parity.training.diffusion.drivers.loss_scaling``, which gives the CPU the scaler CUDA has. A step
whose scaled gradients overflow is skipped by the scaler, as in production: it is held on its loss
and on parameters that did not move; a run whose every step was skipped says it judged no gradient.
"""

from __future__ import annotations

from dataclasses import replace
from unittest import mock

import pytest

import parity.devices
from parity.cases import TrainerCase
from parity.compare import ParityFailure, assert_verdict
from parity.strategies.training import UPSTREAM_RUN_FP16
from parity.targets import get_target
from parity.training.diffusion.drivers.loss_scaling import cpu_loss_scaling
from parity.training.diffusion.drivers.trainer_run import TrainerRecord, UnscaledFloat16, run_trainer
from parity.training.diffusion.verdict import skipped_steps, trainer_verdict, unscaled_overflows


def _run(target: str, case: TrainerCase, tmp_path):
    with cpu_loss_scaling():
        record = run_trainer(get_target(target).load("trainer"), case, str(tmp_path))
    return record, trainer_verdict(case, [record])


@pytest.mark.parametrize("target", ["impl", "logits"])
def test_a_correct_trainer_holds_on_judged_and_skipped_steps(target, tmp_path):
    record, verdict = _run(target, UPSTREAM_RUN_FP16, tmp_path)
    assert any(record.skipped) and not all(record.skipped), record.skipped  # both kinds of step are judged
    assert_verdict(verdict)
    judged = {c.step for c in verdict.comparisons if c.quantity == "grad"}
    assert judged == {k for k, skipped in enumerate(record.skipped) if not skipped}
    for k in (k for k, skipped in enumerate(record.skipped) if skipped):
        before = record.steps[k - 1].params if k else None
        assert before is None or all((record.steps[k].params[n] == p).all() for n, p in before.items())


def test_the_local_mean_bug_is_caught_in_float16(tmp_path):
    _, verdict = _run("known-bug:local-mean", UPSTREAM_RUN_FP16, tmp_path)
    with pytest.raises(ParityFailure, match="^normalisation"):
        assert_verdict(verdict)


def test_a_run_whose_every_step_was_skipped_says_no_gradient_was_judged(tmp_path):
    record, verdict = _run("impl", replace(UPSTREAM_RUN_FP16, eps=0.001), tmp_path)
    assert all(record.skipped) and record.loss_scales == [65536.0, 32768.0, 16384.0]
    assert_verdict(verdict)
    assert verdict.summary().startswith("holds, not informative")
    assert "the loss scaler skipped every optimizer step" in verdict.uninformative


def test_a_step_skipped_without_any_scaling_is_a_finding():
    record = TrainerRecord([], [], None, loss_scales=[2.0, 1.0], skipped=[True, True])
    (finding,) = unscaled_overflows([record])
    assert finding.step == 1 and "not finite even unscaled" in finding.message


def test_ranks_share_the_skipped_steps_or_the_run_is_refused():
    """The scaler checks every rank's reduced gradients, so every rank skips the same steps."""
    ranks = [TrainerRecord([], [[], []], None, skipped=skipped) for skipped in ([False, True], [False, True])]
    assert skipped_steps(ranks) == [False, True]
    ranks[1].skipped = [True, True]
    with pytest.raises(AssertionError, match="disagree on which steps they skipped"):
        skipped_steps(ranks)


def test_float16_on_the_cpu_is_refused_naming_the_device(tmp_path):
    with pytest.raises(ValueError, match="on 'cpu', fp16=True would silently train in float32"):
        run_trainer(get_target("impl").load("trainer"), UPSTREAM_RUN_FP16, str(tmp_path))


def test_a_float16_run_accelerate_does_not_scale_is_refused_not_judged_as_float32(tmp_path):
    """Counting the CPU as a loss-scaling device without giving it a scaler: accelerate's own
    fp16=True on the CPU sets up none, and the run is refused before anything is judged."""
    with (
        mock.patch.object(parity.devices, "LOSS_SCALING_DEVICES", ("cuda", "cpu")),
        pytest.raises(UnscaledFloat16, match="accelerate set up no loss scaler"),
    ):
        run_trainer(get_target("impl").load("trainer"), UPSTREAM_RUN_FP16, str(tmp_path))


def test_float16_is_autocast_only():
    with pytest.raises(ValueError, match="dtype 'float16' needs autocast=True"):
        TrainerCase(dtype="float16")


def test_the_report_in_float16_runs_the_trainer_and_says_why_the_window_scenario_does_not_run():
    from parity.report.markdown import format_markdown
    from parity.report.model import Options
    from parity.report.scenarios import FLOAT16_ONLY_THROUGH_TRAINER, run_report
    from parity.report.text import format_report

    targets = [get_target("known-bug:local-mean"), get_target("impl")]
    options = Options(device="cpu", dtype="float16", seed=0, ddp=False, examples=1)
    with cpu_loss_scaling():
        window, training = run_report(targets, options, ["diffusion-window", "training-run"], lambda message: None)
    assert window.title == FLOAT16_ONLY_THROUGH_TRAINER and not window.columns
    assert training.as_expected and sorted(c.name for c in training.columns) == ["impl", "known-bug:local-mean"]
    impl = next(c for c in training.columns if c.name == "impl")
    assert impl.holds and impl.figures["max |grad - golden| (any step)"] is not None  # some step's gradients judged
    text = format_report([window, training])
    assert "not run in float16" in text and max(len(line) for line in text.splitlines()) <= 120
    assert f"### diffusion-window: {FLOAT16_ONLY_THROUGH_TRAINER}" in format_markdown([window, training], options)
