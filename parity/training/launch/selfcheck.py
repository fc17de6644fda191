"""A distributed smoke check: can these processes form a group and all-reduce?

Also the launcher's own test subject: ``--fail-rank`` makes one rank raise after joining, and
``--hang-rank`` makes one rank stop answering, so the suite can prove that a dead or stuck rank
fails the run with its error instead of hanging it::

    torchrun --standalone --nproc-per-node 2 -m parity.training.launch.selfcheck
"""

from __future__ import annotations

import argparse
import sys
import time

import torch
import torch.distributed as dist

from parity.devices import DEVICES
from parity.training.launch.processes import init_process_group


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m parity.training.launch.selfcheck", description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", choices=DEVICES, help="Gloo on cpu, NCCL on cuda")
    parser.add_argument("--fail-rank", type=int, help="this rank raises after joining the group")
    parser.add_argument("--hang-rank", type=int, help="this rank sleeps instead of taking part")
    args = parser.parse_args(argv)
    init_process_group(args.device)
    rank, world_size = dist.get_rank(), dist.get_world_size()
    if rank == args.fail_rank:
        raise RuntimeError(f"rank {rank} failed on purpose (--fail-rank)")
    if rank == args.hang_rank:
        time.sleep(3600)
    total = torch.tensor([rank + 1.0], device=args.device)
    dist.all_reduce(total)
    expected = world_size * (world_size + 1) / 2
    dist.destroy_process_group()
    if total.item() != expected:
        print(f"rank {rank}: all_reduce gave {total.item()}, expected {expected}", file=sys.stderr)
        return 1
    print(f"rank {rank} of {world_size}: all_reduce ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
