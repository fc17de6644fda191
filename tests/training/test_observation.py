"""The seam observes a trainer from outside, and what it observes can fail (docs/trainer.md).

The realized masks come from the ids the model's embedding receives, ``p`` from replaying the
published noising from the seeded global generator. A trainer that draws elsewhere, in another
order, with another eps, re-seeds the generator, or raises, is named for what it did.
"""

from __future__ import annotations

import pytest
import torch

from oracle.nemotron_diffusion import forward_process
from parity.cases import TrainerCase
from parity.devices import DTYPES
from parity.training.diffusion.drivers.noise_replay import replay_draws
from parity.training.diffusion.drivers.trainer_run import run_trainer, seeded_state
from parity.training.diffusion.verdict import trainer_verdict
from tests.training.variants import (
    CrashingTrainer,
    PrivateGeneratorTrainer,
    ReseedingTrainer,
    SwappedDrawOrderTrainer,
    WrongEpsTrainer,
)


@pytest.mark.parametrize("eps", [1e-3, 0.3])
def test_the_replay_is_the_published_noising(eps):
    """Same generator state, same masks and ``p`` as the oracle's ``forward_process`` (global RNG)."""
    ids = torch.randint(1, 96, (3, 7))
    maskable = torch.rand(3, 7) < 0.7
    state = seeded_state(5)
    with torch.random.fork_rng(devices=[]):
        torch.set_rng_state(state)
        _, published, p_published = forward_process(ids, 96, eps=eps, loss_mask=maskable.long())
    masked, p, _ = replay_draws(state, maskable, eps)
    assert torch.equal(masked, published) and torch.equal(p, p_published)


CASE = TrainerCase(examples_per_rank=3, evaluate=True, eval_batch_size=2)


@pytest.mark.parametrize(
    "trainer_class, says",
    [
        (PrivateGeneratorTrainer, "The global generator did not move between its batch's collation and its forward"),
        (SwappedDrawOrderTrainer, "forward 0: no consistent account of the run's noise explains its masks. Tried as"),
        (WrongEpsTrainer, "eps = 0.05 (declared by the trainer)"),
        (ReseedingTrainer, "re-seeded it or drew from it"),
    ],
    ids=lambda v: v.__name__ if isinstance(v, type) else None,
)
def test_noise_that_is_not_the_published_noising_is_a_noise_finding(trainer_class, says, tmp_path):
    case = CASE if trainer_class is not WrongEpsTrainer else TrainerCase(examples_per_rank=3, eps=0.05)
    verdict = trainer_verdict(case, [run_trainer(trainer_class, case, str(tmp_path))])
    assert not verdict.holds and verdict.failure_kinds == ["noise"]
    assert says in verdict.describe()


@pytest.mark.parametrize("dtype", DTYPES)
def test_a_fused_head_path_that_never_calls_the_model_is_observed(dtype, tmp_path):
    """The embedding's hook sees the noisy input even when only the encoder and the output
    embedding are used (the model exposes ``get_output_embeddings``, as the published one does)."""
    from parity.compare import assert_verdict
    from tests.training.variants import FusedHeadTrainer

    case = TrainerCase(examples_per_rank=4, dtype=dtype, eval_batch_size=3)
    record = run_trainer(FusedHeadTrainer, case, str(tmp_path))
    assert record.contract == "logits (the encoder and the output embedding called directly, never the model)"
    assert_verdict(trainer_verdict(case, [record], strict_precision=True))


def test_a_trainer_that_raises_is_a_crash_finding(tmp_path):
    verdict = trainer_verdict(CASE, [run_trainer(CrashingTrainer, CASE, str(tmp_path))])
    assert verdict.failure_kinds == ["crash"]
    assert "RuntimeError: this trainer fails on purpose at" in verdict.describe()


def test_impls_optional_records_agree_with_what_the_harness_observed(tmp_path):
    """impl keeps records; the harness does not need them, but where they exist they must agree."""
    from impl.trainer import WindowedDiffusionTrainer
    from parity.training.diffusion.drivers import trainer_run as trainer_run

    kept = []

    class Keeping(WindowedDiffusionTrainer):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            kept.append(self)

    record = trainer_run.run_trainer(Keeping, CASE, str(tmp_path))
    assert record.contract == "loss-pair (model(input_ids, labels, masked_indices, p_mask), .loss read)"
    (trainer,) = kept
    observed = [d for window in record.train_draws for d in window]
    recorded = [d for window in trainer.train_draws for d in window]
    assert len(observed) == len(recorded) == CASE.examples_per_rank
    for seen, kept_draw in zip(observed, recorded, strict=True):
        assert torch.equal(seen.masked_indices, kept_draw.masked_indices)
        masked = seen.masked_indices
        assert torch.equal(seen.p_mask[masked], kept_draw.p_mask[masked])
