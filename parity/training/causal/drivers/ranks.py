"""A causal-LM driver on several real ranks (docs/causal-lm.md; docs/running.md, Distributed runs).

:func:`run_on_ranks` launches ``python -m parity.training.causal.drivers.ranks`` as ``world_size`` processes over
Gloo (``parity.training.launch.processes.launch``); each rank joins the group, runs the named driver (a function
``(target, case, rank, world_size) -> CausalRecord``, e.g.
:func:`parity.training.causal.drivers.causal_trainer.run_causal_trainer`) on each named target in turn (a ``Trainer``
subclass, or whatever that driver takes), and writes each record as plain
tensors, lists and strings: ``torch.save`` there, ``torch.load(weights_only=True)`` here, so reading a record back
runs no code from the file.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

import torch
import torch.distributed as dist

from oracle.causal_lm import Document, Row
from oracle.window_reference import StepResult
from parity.compare import Finding
from parity.targets import load_attribute
from parity.training.causal.record import CausalCase, CausalRecord
from parity.training.launch.processes import RankCrashed, init_process_group, launch

MODULE = "parity.training.causal.drivers.ranks"


def _plain(record: CausalRecord) -> dict:
    return {
        "windows": [[[[[list(d.ids), list(d.labels)] for d in row.documents] for row in microbatch]
                     for microbatch in window] for window in record.windows],
        "steps": [{"loss": step.loss, "grads": step.grads, "params": step.params} for step in record.steps],
        "findings": [[f.kind, f.message, f.step, f.rank, f.phase] for f in record.findings],
        "patched": list(record.patched),
    }


def _record(plain: dict) -> CausalRecord:
    windows = [[[Row(tuple(Document(tuple(ids), tuple(labels)) for ids, labels in row)) for row in microbatch]
                for microbatch in window] for window in plain["windows"]]
    steps = [StepResult(step["loss"], step["grads"], step["params"]) for step in plain["steps"]]
    return CausalRecord(windows, steps, [Finding(*finding) for finding in plain["findings"]], list(plain["patched"]))


def run_on_ranks(driver: str, targets: Sequence[str], case: CausalCase,
                 timeout_s: float | None = None) -> list[list[CausalRecord]]:
    """Per target, every rank's record of ``driver`` (``module:function``) running that target (``module:attribute``)
    on ``case``, the targets one after another in one launch of ``case.world_size`` processes (the ranks start, and
    import torch, once); ``parity.training.launch.processes.RankFailed`` naming a rank that failed."""
    with tempfile.TemporaryDirectory(prefix="parity-causal-ranks-") as folder:
        launch(MODULE, ["--driver", driver, *(f"--target={target}" for target in targets), "--case",
                        json.dumps(asdict(case)), "--out", folder], case.world_size, timeout_s=timeout_s)
        return [[_record(torch.load(Path(folder, f"{k}-rank{rank}.pt"), weights_only=True))
                 for rank in range(case.world_size)] for k in range(len(targets))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {MODULE}", description=__doc__.splitlines()[0])
    parser.add_argument("--driver", required=True, metavar="MODULE:FUNCTION")
    parser.add_argument("--target", required=True, action="append", metavar="MODULE:ATTRIBUTE", help="repeatable")
    parser.add_argument("--case", required=True, help="the CausalCase as JSON")
    parser.add_argument("--out", required=True, help="the folder each rank writes <target number>-rank<N>.pt into")
    args = parser.parse_args(argv)
    fields = json.loads(args.case)
    case = CausalCase(**{**fields, "empty_ranks": tuple(fields["empty_ranks"])})
    init_process_group(case.device)
    rank, world_size = dist.get_rank(), dist.get_world_size()
    driver = load_attribute(args.driver)
    for k, target in enumerate(args.target):
        record = driver(load_attribute(target), case, rank, world_size)
        crashes = [f.message for f in record.findings if f.kind == "crash"]
        if crashes and world_size > 1:  # its peers may wait in a collective it never joins (docs/faults.md, Ranks)
            raise RankCrashed(f"the target {target} crashed: {'; '.join(crashes)}")
        torch.save(_plain(record), Path(args.out, f"{k}-rank{rank}.pt"))
        dist.barrier()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
