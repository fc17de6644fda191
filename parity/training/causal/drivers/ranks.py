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
from parity.training.causal.drivers.loop import is_loop, loop_declines
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
        "model": record.model,
    }


def _record(plain: dict) -> CausalRecord:
    windows = [[[Row(tuple(Document(tuple(ids), tuple(labels)) for ids, labels in row)) for row in microbatch]
                for microbatch in window] for window in plain["windows"]]
    steps = [StepResult(step["loss"], step["grads"], step["params"]) for step in plain["steps"]]
    return CausalRecord(windows, steps, [Finding(*finding) for finding in plain["findings"]], list(plain["patched"]),
                        plain["model"])


def run_on_ranks(driver: str, targets: Sequence[str], case: CausalCase,
                 timeout_s: float | None = None) -> list[list[CausalRecord] | str]:
    """Per target, every rank's record of ``driver`` (``module:function``) running that target (``module:attribute``)
    on ``case``, the targets one after another in one launch of ``case.world_size`` processes (the ranks start, and
    import torch, once), or why the target declined the case (a loop's ``supports``,
    ``parity.training.causal.drivers.loop.loop_declines``); ``parity.training.launch.processes.RankFailed`` naming a
    rank that failed."""
    return [records[0] for records in run_cases_on_ranks(driver, targets, [case], timeout_s)]


def run_cases_on_ranks(driver: str, targets: Sequence[str], cases: Sequence[CausalCase],
                       timeout_s: float | None = None) -> list[list[list[CausalRecord] | str]]:
    """``[target][case]``: :func:`run_on_ranks` over several cases of one world size in the one launch."""
    if len({case.world_size for case in cases}) != 1:
        raise ValueError(f"one launch runs one world size; the cases ask {sorted({c.world_size for c in cases})}")
    world_size = cases[0].world_size
    with tempfile.TemporaryDirectory(prefix="parity-causal-ranks-") as folder:
        launch(MODULE, ["--driver", driver, *(f"--target={target}" for target in targets),
                        *(f"--case={json.dumps(asdict(case))}" for case in cases), "--out", folder],
               world_size, timeout_s=timeout_s)
        result = []
        for k in range(len(targets)):
            result.append([])
            for c in range(len(cases)):
                plain = [torch.load(Path(folder, f"{k}-{c}-rank{rank}.pt"), weights_only=True)
                         for rank in range(world_size)]
                result[k].append(plain[0]["declined"] if "declined" in plain[0] else [_record(p) for p in plain])
        return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {MODULE}", description=__doc__.splitlines()[0])
    parser.add_argument("--driver", required=True, metavar="MODULE:FUNCTION")
    parser.add_argument("--target", required=True, action="append", metavar="MODULE:ATTRIBUTE", help="repeatable")
    parser.add_argument("--case", required=True, action="append", help="repeatable: a CausalCase as JSON")
    parser.add_argument("--out", required=True,
                        help="the folder each rank writes <target number>-<case number>-rank<N>.pt into")
    args = parser.parse_args(argv)
    cases = [CausalCase(**{**fields, "empty_ranks": tuple(fields["empty_ranks"])})
             for fields in map(json.loads, args.case)]
    init_process_group(cases[0].device)
    rank, world_size = dist.get_rank(), dist.get_world_size()
    driver = load_attribute(args.driver)
    for k, target in enumerate(args.target):
        subject = load_attribute(target)
        for c, case in enumerate(cases):
            path = Path(args.out, f"{k}-{c}-rank{rank}.pt")
            if is_loop(subject) and (why := loop_declines(subject, case)):
                torch.save({"declined": why}, path)
                continue
            record = driver(subject, case, rank, world_size)
            crashes = [f.message for f in record.findings if f.kind == "crash"]
            if crashes and world_size > 1:  # its peers may wait in a collective it never joins (docs/faults.md, Ranks)
                raise RankCrashed(f"the target {target} crashed: {'; '.join(crashes)}")
            torch.save(_plain(record), path)
            dist.barrier()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
