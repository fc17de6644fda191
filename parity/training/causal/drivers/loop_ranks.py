"""Loops run on real ranks, each judged by the window rule: the entry point every rank of a launch runs
(``parity.training.launch.processes.launch``), or torchrun on GPUs::

    torchrun --standalone --nproc-per-node 2 -m parity.training.causal.drivers.loop_ranks \\
        --target megatron-schedule:per-token --case '{"world_size": 2}' [--device cuda]

``--target NAME`` runs a registered target's loop interface, ``--loop module:attribute`` any loop (repeatable,
in order, all on the one case). Every rank runs each loop (docs/causal-lm.md, The loop interface) and sends its
record to rank 0, which prints one JSON line per loop: its verdict's kinds and diagnosis, or why it declined
the case (a setting it does not follow, its ``supports``).
"""

from __future__ import annotations

import argparse
import json
import sys

import torch.distributed as dist

from parity.targets import get_target, load_attribute
from parity.training.causal.drivers.loop import loop_declines, run_loop
from parity.training.causal.record import CausalCase
from parity.training.causal.verdict import causal_verdict
from parity.training.launch.processes import init_process_group


def case_from_json(text: str, device: str) -> CausalCase:
    """The case a launch names, its world size the launch's own."""
    fields = json.loads(text)
    fields["empty_ranks"] = tuple(fields.get("empty_ranks", ()))
    return CausalCase(**{**fields, "device": device, "world_size": dist.get_world_size()})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m parity.training.causal.drivers.loop_ranks",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--target", action="append", default=[], metavar="NAME", help="repeatable: a target's loop")
    parser.add_argument("--loop", action="append", default=[], metavar="MODULE:ATTRIBUTE", help="repeatable: a loop")
    parser.add_argument("--case", default="{}", help="the CausalCase's fields as JSON (world_size: the launch's)")
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args(argv)
    init_process_group(args.device)
    loops = [(name, get_target(name).load("loop")) for name in args.target]
    loops += [(path, load_attribute(path)) for path in args.loop]
    case = case_from_json(args.case, args.device)
    for name, loop in loops:
        if why := loop_declines(loop, case):  # a setting the loop does not follow: said, never judged
            if dist.get_rank() == 0:
                print(json.dumps({"loop": name, "declined": why}), flush=True)
            continue
        records = [None] * case.world_size
        dist.all_gather_object(records, run_loop(loop, case))
        if dist.get_rank() == 0:
            verdict = causal_verdict(case, records)
            print(json.dumps({"loop": name, "holds": verdict.holds, "kinds": verdict.failure_kinds,
                              "diagnosis": verdict.diagnosis, "model": records[0].model}), flush=True)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
