"""The two-rank training cases, each rank a real process running ``Trainer.train()``.

One entry point for the test suite (through ``parity.training.launch.processes.launch``) and for a multi-GPU
nightly job::

    torchrun --standalone --nproc-per-node 2 -m parity.training.diffusion.drivers.ranks --target impl --strict [--device cuda]

Four fixed cases (unequal counts, one rank empty, all ranks empty, rank-local normalisation with
the ranks seeded apart) and, with ``--draw N``, N cases drawn from ``--draw-seed`` out of the declared
case space (``parity.trainer_space.draw_trainer_case``, the one the suite's strategy reads). Every rank
trains on its share, observed from outside (docs/trainer.md), and sends its record to rank 0, which
replays all ranks' draws in the oracle and prints one JSON verdict per case, with the kinds of
what failed. ``--trainer module:Class`` (repeatable) runs trainers that are not registered targets
instead, ``--also case=module:Class`` one more trainer on one fixed case. A trainer whose ``ShippedTrainer``
declares one rank only (``one_rank_only``) declines every case on more.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from dataclasses import replace

import torch.distributed as dist

from parity.cases import TrainerCase, at_dtype
from parity.devices import DEVICES, TRAINER_DTYPES, check_dtype_runs_on
from parity.safety.threads import freeze_heap
from parity.safety.usage import write_atomically
from parity.targets import ConfigDeclined, get_target, load_attribute
from parity.trainer_space import draw_trainer_case
from parity.training.diffusion.drivers.trainer_run import TrainerRecord, eps_declined, run_trainer
from parity.training.diffusion.verdict import trainer_verdict
from parity.training.launch.processes import RankCrashed, init_process_group
from parity.training.shipped import as_shipped

_BASE = TrainerCase(examples_per_rank=4, window_size=2, max_length=10, data_seed=3, noise_seed=7)
DDP_CASES: dict[str, TrainerCase] = {
    # Microbatches of two rows, rank 0's first with a row of all prompt beside one with an answer; two
    # windows, so that step 1 starts where step 0 left (a re-seed or a NaN from step 1 on shows there).
    "unequal-counts": replace(_BASE, examples_per_rank=8, train_batch_size=2, prompt_only_rows=(1,)),
    "one-rank-empty": replace(_BASE, empty_ranks=(1,)),
    "all-ranks-empty": replace(_BASE, empty_ranks=(0, 1)),
    # Eight evaluation rows in batches of three over two ranks: one rank repeats rows to keep the
    # batches even, and accelerate drops the repeats when it gathers the evaluation loss. Each rank
    # is seeded apart (args.seed + rank), so each replays a timeline of its own.
    "rank-local": replace(_BASE, average_tokens_across_devices=False, eval_batch_size=3, seed_per_rank=True),
}


class _RandomDraws:
    """``parity.trainer_space.Draws`` over a seeded ``random.Random``."""

    def __init__(self, seed: int):
        self._rng = random.Random(seed)

    def integer(self, low: int, high: int) -> int:
        return self._rng.randint(low, high)

    def choice(self, values):
        return self._rng.choice(values)

    def boolean(self) -> bool:
        return self._rng.random() < 0.5

    def fraction(self, low: float, high: float) -> float:
        return self._rng.uniform(low, high)

    def label(self, text: str) -> None:
        """Drawn cases are named by their JSON, not labelled."""


def drawn_cases(count: int, seed: int, trainer_class, world_size: int = 2) -> dict[str, TrainerCase]:
    """``count`` cases drawn from ``seed`` out of the declared space, inside the trainer's eps domain,
    skipping those the eps rule declines for ``trainer_class`` (a ``Trainer`` subclass or what its target
    ships, ``parity.training.shipped``), as the suite's property does."""
    draws, cases = _RandomDraws(seed), {}
    while len(cases) < count:
        case = draw_trainer_case(draws, world_size=world_size, eps_domain=as_shipped(trainer_class).eps_domain)
        if eps_declined(trainer_class, case) is None:
            cases[f"drawn-{seed}-{len(cases)}"] = case
    return cases


def realized_counts(record: TrainerRecord) -> list[int]:
    """Masked tokens this rank realized in each window."""
    return [sum(int(draw.masked_indices.sum()) for draw in window) for window in record.train_draws]


def declined(reasons: list[str]) -> dict:
    """A case the trainer's ``__init__`` declined (``ConfigDeclined``) on some rank: skipped, not failed."""
    reason = next(r for r in reasons if r)
    return {"holds": True, "declined": reason, "kinds": [], "notes": [f"declined: {reason}"], "comparisons": 0,
            "failures": 0, "worst": f"declined: {reason}", "worst_ratio": 0.0}


def verdict(case: TrainerCase, records: list[TrainerRecord]) -> dict:
    result = trainer_verdict(case, records)
    failures = result.failures
    worst = max(result.comparisons, key=lambda c: c.ratio, default=None)
    return {
        "holds": result.holds,
        "kinds": result.failure_kinds,
        "notes": [c.describe() for c in result.notes[:3]] + ([result.uninformative] if result.uninformative else []),
        "comparisons": len(result.comparisons),
        "failures": len(failures) + len(result.findings),
        "worst": result.describe(3) if not result.holds else (f"{worst.name}: error/budget {worst.ratio:.3g}" if worst else "-"),
        "worst_ratio": result.worst_ratio,
        "diagnosis": result.diagnosis,
        "counts_per_rank": [realized_counts(record) for record in records],
        "contract": records[0].contract,
        "eps": f"{records[0].eps:g} ({records[0].eps_source})",
        "case": case.to_json(),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m parity.training.diffusion.drivers.ranks", description=__doc__.splitlines()[0])
    parser.add_argument("--target", action="append", default=[], metavar="NAME",
                        help="repeatable: targets whose trainers run (default: impl; verdicts keyed 'NAME case' for several)")
    parser.add_argument(
        "--trainer", action="append", default=[], metavar="MODULE:CLASS",
        help="repeatable: run these trainer classes instead of the target's (verdicts keyed 'MODULE:CLASS case')",
    )
    parser.add_argument("--case", action="append", choices=sorted(DDP_CASES), help="repeatable; default: all")
    parser.add_argument(
        "--also", action="append", default=[], metavar="CASE=MODULE:CLASS",
        help="repeatable: also run this trainer class on this fixed case (verdict keyed 'MODULE:CLASS CASE')",
    )
    parser.add_argument("--draw", type=int, default=0, metavar="N", help="also run N cases drawn from --draw-seed")
    parser.add_argument("--draw-seed", type=int, default=0, metavar="S", help="seed of the drawn cases (default: 0)")
    parser.add_argument("--device", default="cpu", choices=DEVICES, help="Gloo on cpu, NCCL on cuda")
    parser.add_argument("--dtype", choices=TRAINER_DTYPES,
                        help="working dtype of every case (default: float32; drawn cases draw theirs; float16 on cuda)")
    parser.add_argument("--json", help="rank 0 writes the verdicts here")
    parser.add_argument("--progress", metavar="PATH", help="rank 0 appends a line here as each case starts")
    parser.add_argument("--strict", action="store_true", help="rank 0 exits 1 when a case breaks parity")
    args = parser.parse_args(argv)
    if args.dtype:
        try:
            check_dtype_runs_on(args.dtype, args.device)
        except ValueError as error:
            parser.error(str(error))
    trainers = {path: load_attribute(path) for path in args.trainer}
    trainers |= {name: get_target(name).load("trainer") for name in args.target}
    trainers = trainers or {"impl": get_target("impl").load("trainer")}
    runs = []  # (verdict key, trainer class, case)
    for label, trainer_class in trainers.items():
        cases = {name: DDP_CASES[name] for name in args.case or list(DDP_CASES)}
        cases |= drawn_cases(args.draw, args.draw_seed, trainer_class)
        runs += [(name if len(trainers) == 1 else f"{label} {name}", trainer_class, case) for name, case in cases.items()]
    for also in args.also:
        name, _, path = also.partition("=")
        if name not in DDP_CASES:
            parser.error(f"--also {also!r}: the case must be one of {', '.join(sorted(DDP_CASES))}")
        runs.append((f"{path} {name}", load_attribute(path), DDP_CASES[name]))

    init_process_group(args.device)
    freeze_heap()  # every run below ends in a full gc.collect() (parity.safety.threads)
    rank, world_size = dist.get_rank(), dist.get_world_size()
    verdicts = {}
    for number, (key, trainer_class, case) in enumerate(runs, start=1):
        if rank == 0 and args.progress:
            with open(args.progress, "a") as progress:
                progress.write(f"{key} ({number}/{len(runs)})\n")
        if world_size > 1 and (reason := as_shipped(trainer_class).one_rank_only):  # every rank skips it alike
            if rank == 0:
                verdicts[key] = declined([f"it trains on one rank only: {reason}"])
            continue
        if args.dtype:
            case = at_dtype(case, args.dtype)
        case = replace(case, device=args.device)
        with tempfile.TemporaryDirectory(prefix="parity-ddp-") as output_dir:
            try:
                record: TrainerRecord | str = run_trainer(trainer_class, case, output_dir, world_size, rank)
            except ConfigDeclined as decline:  # a decline, never a crash: every rank says so below
                record = str(decline) or "declined"
        if not isinstance(record, str) and record.crashed and world_size > 1:  # its peers may be inside a collective
            raise RankCrashed(f"the target crashed in case {key}: " + "; ".join(
                f.message for f in record.findings if f.kind == "crash"))
        records: list[TrainerRecord | str | None] = [None] * world_size
        dist.all_gather_object(records, record)
        if rank == 0:
            reasons = [r if isinstance(r, str) else "" for r in records]
            verdicts[key] = declined(reasons) if any(reasons) else verdict(case, records)
    dist.destroy_process_group()  # not on the way out of a failure: a peer may be stuck in a collective
    if rank != 0:
        return 0
    text = json.dumps({"target": ", ".join(trainers), "world_size": world_size, "cases": verdicts}, indent=2)
    print(text)
    if args.json:
        write_atomically(args.json, text)
    return 1 if args.strict and not all(v["holds"] for v in verdicts.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
