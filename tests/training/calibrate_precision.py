"""The low-precision calibration of docs/budget.md (bfloat16, float16): correct alternatives and every
known trainer bug, run in the working dtype on drawn cases and held to the budget against the float64
golden on the CPU.

    python -m tests.training.calibrate_precision [--dtype bfloat16|float16] [--runs N] [--seed S]

bfloat16: first the loss targets through accumulation windows (``parity.training.diffusion.drivers.window_run``; windows of 3
microbatches of 2 rows): impl as it runs, impl with each window's rows re-cut into microbatches of
one row (a legitimate reordering), and the local-mean bug. Then whole Trainer runs, each case both
ways production trains in bfloat16: the weights in bfloat16, and ``TrainingArguments(bf16=True)``
(autocast over float32 weights). float16: whole Trainer runs under ``TrainingArguments(fp16=True)``
with accelerate's loss scaling, on the CPU as on CUDA (``parity.training.diffusion.drivers.loss_scaling``).

Prints, per trainer and way, the worst error/budget of any tensor; for a known bug, the smallest
such worst ratio over the cases that are informative, and how many were not. A correct trainer must
stay below 1 everywhere; a bug must exceed 1 on every informative case. Not collected by pytest.
"""

from __future__ import annotations

import argparse
import math
import tempfile
from dataclasses import replace

import torch

from parity.cases import PUBLISHED_EPS, WindowCase
from parity.targets import get_target
from parity.training.diffusion.drivers.loss_scaling import cpu_loss_scaling
from parity.training.diffusion.drivers.ranks import drawn_cases
from parity.training.diffusion.drivers.trainer_run import eps_declined, run_trainer
from parity.training.diffusion.drivers.window_cases import parity_run
from parity.training.diffusion.verdict import trainer_verdict
from tests.training.variants import ChunkedCETrainer, Float32LossTrainer, ReorderedSumTrainer


class UpcastChunkedCETrainer(ChunkedCETrainer):
    """The chunked cross-entropy with its own backward, computed on float32 logits (an upcast kernel)."""

    def masked_sum(self, logits, targets, masked, p):
        return super().masked_sum(logits.float(), targets, masked, p).to(logits.dtype)


CORRECT = {
    "impl": lambda: get_target("impl").load("trainer"),
    "logits": lambda: get_target("logits").load("trainer"),
    "ChunkedCETrainer": lambda: ChunkedCETrainer,
    "UpcastChunkedCETrainer": lambda: UpcastChunkedCETrainer,
    "ReorderedSumTrainer": lambda: ReorderedSumTrainer,
    "Float32LossTrainer": lambda: Float32LossTrainer,
}
BUGS = {
    name: (lambda name=name: get_target(name).load("trainer"))
    for name in ("known-bug:local-mean", "known-bug:logits-local-mean")
}
WAYS = {
    "bfloat16": {"bf16 weights": False, "autocast (bf16=True)": True},
    "float16": {"autocast and loss scaling (fp16=True)": True},
}


def window_case(seed: int) -> WindowCase:
    return WindowCase(
        window_sizes=(3,), rows_per_microbatch=2, length=8, batch_kinds=(("answer", "answer"),) * 3, with_labels=True,
        with_attention_mask=True, data_seed=seed, noise_seed=seed + 1000, eps=PUBLISHED_EPS, dtype=torch.bfloat16,
        frozen_head=False,
    )


def window_rows(runs: int) -> int:
    """impl, impl re-cut one row per microbatch, and the local-mean bug, on ``runs`` window cases."""
    impl, bug = get_target("impl").load("loss"), get_target("known-bug:local-mean").load("loss")
    unexpected = 0
    for name, loss, regroup, is_bug in (("impl", impl, None, False), ("impl, one row per microbatch", impl, 1, False),
                                        ("known-bug:local-mean", bug, None, True)):
        worst, smallest, uninformative = 0.0, math.inf, 0
        for seed in range(runs):
            run = parity_run(loss, window_case(seed), regroup=regroup)
            ratio, holds = max(c.ratio for c in run.comparisons()), all(c.holds for c in run.comparisons())
            worst = max(worst, ratio)
            if is_bug and holds and run.uninformative():
                uninformative += 1
            elif is_bug:
                smallest, unexpected = min(smallest, ratio), unexpected + holds
            else:
                unexpected += not holds
        shown = f"{smallest:.3g}" if is_bug else "-"
        print(f"{'window: ' + name:50} {worst:12.3g} {shown:>19} {uninformative if is_bug else '-':>16}", flush=True)
    return unexpected


def verdict(trainer_class, case):
    case = replace(case, eps=PUBLISHED_EPS) if eps_declined(trainer_class, case) else case
    with tempfile.TemporaryDirectory(prefix="parity-calibrate-") as folder:
        record = run_trainer(trainer_class, case, folder)
    return trainer_verdict(case, [record], strict_precision=False)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.training.calibrate_precision", description=__doc__.splitlines()[0])
    parser.add_argument("--dtype", choices=sorted(WAYS), default="bfloat16", help="working dtype (default: bfloat16)")
    parser.add_argument("--runs", type=int, default=25, help="drawn cases (default: 25)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the drawn cases (default: 0)")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    cases = list(drawn_cases(args.runs, args.seed, CORRECT["impl"](), world_size=1).values())
    print(f"{'target':50} {'worst ratio':>12} {'smallest bug ratio':>19} {'not informative':>16}")
    unexpected = window_rows(args.runs) if args.dtype == "bfloat16" else 0
    with cpu_loss_scaling():
        unexpected += trainer_rows(cases, args.dtype)
    print(f"\n{args.runs} cases (seed {args.seed}); unexpected verdicts: {unexpected}")
    return 1 if unexpected else 0


def trainer_rows(cases, dtype: str) -> int:
    """Every correct alternative and known bug, every way production trains in ``dtype``."""
    unexpected = 0
    for name, load in {**CORRECT, **BUGS}.items():
        trainer_class, is_bug = load(), name in BUGS
        for way, autocast in WAYS[dtype].items():
            worst, smallest, uninformative = 0.0, math.inf, 0
            for case in cases:
                result = verdict(trainer_class, replace(case, dtype=dtype, autocast=autocast))
                worst = max(worst, result.worst_ratio)
                if is_bug and result.uninformative and result.holds:
                    uninformative += 1
                elif is_bug:
                    smallest = min(smallest, result.worst_ratio)
                    unexpected += result.holds
                else:
                    unexpected += not result.holds
            shown = f"{smallest:.3g}" if is_bug else "-"
            print(f"{name + ', ' + way:50} {worst:12.3g} {shown:>19} {uninformative if is_bug else '-':>16}", flush=True)
    return unexpected


if __name__ == "__main__":
    raise SystemExit(main())
