"""The CLI's other commands: ``targets``, ``bench``, ``ddp``, ``fuzz``, ``replay``, ``repro`` (docs/running.md,
docs/fleet.md), and the table of every command with its one-line help."""

from __future__ import annotations

import argparse
import os
import sys
from typing import get_args

from parity.cli.output import emit, note, progress
from parity.cli.report import report
from parity.cases import CAUSAL_DTYPES
from parity.contracts import checked_interface
from parity.devices import check_dtype_runs_on, check_ranks_fit, resolve_device
from parity.safety.usage import check_at_least, check_output_path, write_atomically
from parity.targets import Interface, UnknownTargetError, get_target, listed_targets


def targets(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    for target in listed_targets():
        if isinstance(target, str):  # an installed entry point that failed to load
            print(target)
            continue
        interfaces = ", ".join(i for i in get_args(Interface) if target.provides(i))
        print(f"{target.name:28} expected to {target.expect:4}  [{interfaces}]  {target.description}")
    return 0


def bench(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    from parity.fleet.bench import bench_main

    return bench_main(parser, args)


def ddp(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """Launch the two-rank cases as real processes, a progress line per case, and print rank 0's
    verdicts as the report prints its ``distributed`` scenario: the verdict line first, a failing
    verdict in full; the JSON only with ``--json``."""
    import json
    import tempfile

    from parity.report.model import Options, as_json
    from parity.report.scenarios import distributed_result
    from parity.report.text import format_report
    from parity.training.launch.processes import RankFailed, launch

    try:
        device = resolve_device(args.device)
        check_dtype_runs_on(args.dtype, device)
        check_ranks_fit(device, args.world_size)
        check_at_least("--draw", args.draw, 0)
        check_at_least("--draw-seed", args.draw_seed, 0)
        if args.json:
            check_output_path("--json", args.json)
        target = get_target(args.target)
        causal = not target.provides("trainer") and (target.provides("causal_trainer") or target.provides("loop"))
        checked_interface(target, ("causal_trainer" if target.provides("causal_trainer") else "loop") if causal
                          else "trainer")
        if causal and (args.dtype not in CAUSAL_DTYPES or args.draw or args.world_size != 2):
            raise ValueError(f"a causal-LM target runs the two-rank corners in {', '.join(CAUSAL_DTYPES)}, on 2 ranks, "
                             "nothing drawn (docs/causal-lm.md, Two ranks in a session)")
    except (ValueError, TypeError, UnknownTargetError, LookupError) as error:
        parser.error(str(error))
    if causal:
        return _causal_ddp(parser, args, target, device)
    with tempfile.TemporaryDirectory(prefix="parity-ddp-cli-") as workdir:
        verdicts, progress_file = f"{workdir}/verdicts.json", f"{workdir}/progress"
        arguments = ["--target", args.target, "--device", device, "--dtype", args.dtype, "--json", verdicts,
                     "--progress", progress_file]
        if args.draw:
            arguments += ["--draw", str(args.draw), "--draw-seed", str(args.draw_seed)]
        try:
            follow(lambda: launch("parity.training.diffusion.drivers.ranks", arguments, args.world_size,
                                  timeout_s=args.timeout),
                   progress_file, lambda line: progress(f"ddp: {target.name}: {line}"))
        except RankFailed as error:
            print(f"{parser.prog}: {error}", file=sys.stderr)
            return 1
        with open(verdicts) as handle:
            cases = json.load(handle)["cases"]
    options = Options(device=device, dtype=args.dtype, under_test=(target.name,))
    result = distributed_result([target], {target.name: cases}, options)
    emit(format_report([result]))
    if args.json:
        write_atomically(args.json, as_json([result], options))
        note(f"wrote {args.json} (json)")
    return 0 if result.as_expected else 1


def follow(run, path: str, say, every_s: float = 0.2):
    """``run()`` in this thread, the main one, where Ctrl-C and SIGTERM land (so the launcher's cleanup runs at
    once), while a thread passes the lines appended to ``path`` to ``say``; ``run()``'s result."""
    import threading

    seen, done = 0, threading.Event()

    def new_lines() -> None:
        nonlocal seen
        if os.path.exists(path):
            with open(path) as handle:
                lines = handle.read().splitlines()
            for line in lines[seen:]:
                say(line)
            seen = len(lines)

    def watch() -> None:
        while not done.wait(every_s):
            new_lines()

    watcher = threading.Thread(target=watch, name="parity-progress", daemon=True)
    watcher.start()
    try:
        return run()
    finally:
        done.set()
        watcher.join()
        new_lines()


def fuzz(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    from parity.fleet.fuzz import fuzz_main

    return fuzz_main(parser, args, progress)


def repro(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    from parity.fleet.repro import repro_main

    return repro_main(parser, args, progress)


def replay(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    from parity.fleet.fuzz import replay_main

    return replay_main(parser, args)


REPORT_HELP = "side-by-side verdict: known bugs, impl (and any --target) and the oracle, per scenario"


COMMANDS = {
    "report": (report, REPORT_HELP),
    "bench": (bench, "how fast the property suite finds each known bug, and what it costs"),
    "targets": (targets, "list the registered targets and their interfaces"),
    "ddp": (ddp, "the two-rank training cases of one target, each rank a real process"),
    "fuzz": (fuzz, "the property suite against one target as a HypoFuzz campaign, into the shared example database"),
    "replay": (replay, "a target's saved counterexamples from the shared example database, as the suite reports them"),
    "repro": (repro, "each failing property of a target as a short pytest file that needs only the target's own package"),
}



def _causal_ddp(parser: argparse.ArgumentParser, args: argparse.Namespace, target, device: str) -> int:
    """A causal-LM trainer or loop on the two-rank corners (docs/causal-lm.md, Two ranks in a session), in one
    launch, each corner's verdict a cell of one column; a corner a loop declines says why."""
    from dataclasses import replace

    from parity.report.model import Column, Options, ScenarioResult, as_json
    from parity.report.text import format_report
    from parity.strategies.causal import TWO_RANK_CORNERS
    from parity.training.causal.drivers.ranks import run_cases_on_ranks
    from parity.training.causal.verdict import causal_verdict
    from parity.training.launch.processes import RankFailed
    from parity.training.launch.session import CAUSAL_DRIVER, causal_subject

    corners = [replace(case, device=device, dtype=case.dtype if args.dtype == "float32" else args.dtype)
               for case in TWO_RANK_CORNERS]
    progress(f"ddp: {target.name}: {len(corners)} two-rank corners in one launch")
    try:
        [ran] = run_cases_on_ranks(CAUSAL_DRIVER, [causal_subject(target)], corners, timeout_s=args.timeout)
    except RankFailed as error:
        print(f"{parser.prog}: {error}", file=sys.stderr)
        return 1
    column = Column(target.name, target.expect, True, {})
    for k, (case, records) in enumerate(zip(corners, ran, strict=True)):
        row = (f"corner {k + 1}: {case.dtype}, {'own counts' if not case.average_tokens_across_devices else 'counts summed'}"
               f"{', rank 1 empty' if case.empty_ranks else ''}{', packed' if case.packed else ''}")
        if isinstance(records, str):
            column.figures[row] = f"declined: {records}"
            continue
        verdict = causal_verdict(case, records)
        column.figures[row] = "holds" if verdict.holds else f"FAILS: {', '.join(verdict.failure_kinds)}: {verdict.diagnosis}"
        if not verdict.holds:
            column.holds = False
            column.failures[row] = verdict.describe(5)
            column.diagnosis = column.diagnosis or verdict.diagnosis
    options = Options(device=device, dtype=args.dtype, under_test=(target.name,))
    result = ScenarioResult("distributed", "causal-LM training on two ranks, the corners of "
                            "parity.strategies.causal.TWO_RANK_CORNERS", "docs/budget.md, the window rule")
    result.columns.append(column)
    emit(format_report([result]))
    if args.json:
        write_atomically(args.json, as_json([result], options))
        note(f"wrote {args.json} (json)")
    return 0 if result.as_expected else 1
