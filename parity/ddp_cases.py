"""The two-rank training cases of SPEC §5.5, each rank a real process running ``Trainer.train()``.

One entry point for the test suite (through ``parity.distributed.launch``) and for a multi-GPU
nightly job::

    torchrun --standalone --nproc-per-node 2 -m parity.ddp_cases --target impl --strict [--device cuda]

Every rank trains on its share and sends its record (gradients, parameters, realized draws) to
rank 0, which replays all ranks' draws in the oracle and prints one JSON verdict per case.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from dataclasses import replace

import torch.distributed as dist

from parity.compare import Comparison
from parity.distributed import init_process_group
from parity.targets import get_target
from parity.trainer_run import TrainerCase, TrainerRecord, run_trainer, trainer_comparisons

_BASE = TrainerCase(examples_per_rank=4, accumulation=2, max_length=10, data_seed=3, noise_seed=7)
DDP_CASES: dict[str, TrainerCase] = {
    "unequal-counts": _BASE,
    "one-rank-empty": replace(_BASE, empty_ranks=(1,)),
    "all-ranks-empty": replace(_BASE, empty_ranks=(0, 1)),
    "rank-local": replace(_BASE, average_tokens_across_devices=False),
}


def realized_counts(record: TrainerRecord) -> list[int]:
    """Masked tokens this rank realized in each window."""
    return [sum(int(draw.masked_indices.sum()) for draw in window) for window in record.train_draws]


def verdict(case: TrainerCase, records: list[TrainerRecord]) -> dict:
    comparisons: list[Comparison] = trainer_comparisons(case, records)
    failures = [c for c in comparisons if not c.holds]
    worst = max(comparisons, key=lambda c: c.ratio)
    return {
        "holds": not failures,
        "comparisons": len(comparisons),
        "failures": len(failures),
        "worst": worst.describe() if failures else f"{worst.name}: error/budget {worst.ratio:.3g}",
        "worst_ratio": worst.ratio,
        "counts_per_rank": [realized_counts(record) for record in records],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m parity.ddp_cases", description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="impl", help="target whose trainer runs (default: impl)")
    parser.add_argument("--case", action="append", choices=sorted(DDP_CASES), help="repeatable; default: all")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"], help="Gloo on cpu, NCCL on cuda")
    parser.add_argument("--json", help="rank 0 writes the verdicts here")
    parser.add_argument("--strict", action="store_true", help="rank 0 exits 1 when a case breaks parity")
    args = parser.parse_args(argv)
    trainer_class = get_target(args.target).load("trainer")

    init_process_group(args.device)
    rank, world_size = dist.get_rank(), dist.get_world_size()
    verdicts = {}
    try:
        for name in args.case or list(DDP_CASES):
            case = replace(DDP_CASES[name], device=args.device)
            with tempfile.TemporaryDirectory(prefix=f"parity-{name}-") as output_dir:
                record = run_trainer(trainer_class, case, output_dir, world_size)
            records: list[TrainerRecord | None] = [None] * world_size
            dist.all_gather_object(records, record)
            if rank == 0:
                verdicts[name] = verdict(case, records)
    finally:
        dist.destroy_process_group()
    if rank != 0:
        return 0
    text = json.dumps({"target": args.target, "world_size": world_size, "cases": verdicts}, indent=2)
    print(text)
    if args.json:
        with open(args.json, "w") as handle:
            handle.write(text)
    return 1 if args.strict and not all(v["holds"] for v in verdicts.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
