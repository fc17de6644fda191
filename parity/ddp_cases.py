"""The two-rank training cases, each rank a real process running ``Trainer.train()``.

One entry point for the test suite (through ``parity.distributed.launch``) and for a multi-GPU
nightly job::

    torchrun --standalone --nproc-per-node 2 -m parity.ddp_cases --target impl --strict [--device cuda]

Four fixed cases (unequal counts, one rank empty, all ranks empty, rank-local normalisation) and,
with ``--draw N``, N cases drawn from ``--draw-seed`` (rows per rank, windows, lengths, seeds, empty
ranks, rank-local or gathered counts, eps, evaluation). Every rank trains on its share, observed
from outside (docs/trainer.md), and sends its record to rank 0, which replays all ranks' draws in
the oracle and prints one JSON verdict per case, with the kinds of what failed.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from dataclasses import replace

import torch.distributed as dist

from parity.devices import DEVICES
from parity.distributed import init_process_group
from parity.targets import get_target
from parity.trainer_run import TrainerCase, TrainerRecord, declares_eps, run_trainer, trainer_verdict

_BASE = TrainerCase(examples_per_rank=4, window_size=2, max_length=10, data_seed=3, noise_seed=7)
DDP_CASES: dict[str, TrainerCase] = {
    "unequal-counts": _BASE,
    "one-rank-empty": replace(_BASE, empty_ranks=(1,)),
    "all-ranks-empty": replace(_BASE, empty_ranks=(0, 1)),
    # Eight evaluation rows in batches of three over two ranks: one rank repeats rows to keep the
    # batches even, and accelerate drops the repeats when it gathers the evaluation loss.
    "rank-local": replace(_BASE, average_tokens_across_devices=False, eval_batch_size=3),
}


def drawn_cases(count: int, seed: int, world_size: int = 2, eps: bool = True) -> dict[str, TrainerCase]:
    """``count`` two-rank cases drawn from ``seed``: everything the fixed four hold constant varies."""
    rng = random.Random(seed)
    cases = {}
    for i in range(count):
        rows = rng.randint(1, 4)
        cases[f"drawn-{seed}-{i}"] = TrainerCase(
            examples_per_rank=rows,
            window_size=rng.randint(1, 3),
            max_length=rng.randint(2, 10),
            data_seed=rng.randrange(2**16),
            noise_seed=rng.randrange(2**16),
            model_seed=rng.randint(0, 3),
            average_tokens_across_devices=rng.random() < 0.6,
            empty_ranks=tuple(r for r in range(world_size) if rng.random() < 0.25),
            evaluate=rng.random() < 0.5,
            eval_batch_size=rng.randint(0, rows),
            eps=rng.choice([1e-3, 1e-3, 0.05, 0.5]) if eps else 1e-3,
        )
    return cases


def realized_counts(record: TrainerRecord) -> list[int]:
    """Masked tokens this rank realized in each window."""
    return [sum(int(draw.masked_indices.sum()) for draw in window) for window in record.train_draws]


def verdict(case: TrainerCase, records: list[TrainerRecord]) -> dict:
    result = trainer_verdict(case, records)
    failures = result.failures
    worst = max(result.comparisons, key=lambda c: c.ratio, default=None)
    return {
        "holds": result.holds,
        "kinds": result.failure_kinds,
        "notes": [c.describe() for c in result.notes[:3]],
        "comparisons": len(result.comparisons),
        "failures": len(failures) + len(result.findings),
        "worst": result.describe(3) if not result.holds else (f"{worst.name}: error/budget {worst.ratio:.3g}" if worst else "-"),
        "worst_ratio": result.worst_ratio,
        "counts_per_rank": [realized_counts(record) for record in records],
        "case": case.to_json(),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m parity.ddp_cases", description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="impl", help="target whose trainer runs (default: impl)")
    parser.add_argument("--case", action="append", choices=sorted(DDP_CASES), help="repeatable; default: all four")
    parser.add_argument("--draw", type=int, default=0, metavar="N", help="also run N cases drawn from --draw-seed")
    parser.add_argument("--draw-seed", type=int, default=0, metavar="S", help="seed of the drawn cases (default: 0)")
    parser.add_argument("--device", default="cpu", choices=DEVICES, help="Gloo on cpu, NCCL on cuda")
    parser.add_argument("--json", help="rank 0 writes the verdicts here")
    parser.add_argument("--strict", action="store_true", help="rank 0 exits 1 when a case breaks parity")
    args = parser.parse_args(argv)
    trainer_class = get_target(args.target).load("trainer")
    cases = {name: DDP_CASES[name] for name in args.case or list(DDP_CASES)}
    cases |= drawn_cases(args.draw, args.draw_seed, eps=declares_eps(trainer_class))

    init_process_group(args.device)
    rank, world_size = dist.get_rank(), dist.get_world_size()
    verdicts = {}
    try:
        for name, case in cases.items():
            case = replace(case, device=args.device)
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
