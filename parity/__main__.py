"""``python -m parity``: the one-command verdict before a pull request.

    python -m parity [report]        every scenario, CPU, float32 (the default command), the two-rank
                                     cases included where two ranks fit (two cores; --no-ddp skips them)
    python -m parity bench           how fast the suite finds each known bug, and what it costs
    python -m parity targets         the registered targets
    python -m parity ddp             the two-rank training cases of one target, as real processes
    python -m parity fuzz            the property suite against one target as a HypoFuzz campaign (docs/fleet.md)
    python -m parity replay          a target's saved counterexamples, from the shared example database
    python -m parity repro           each failing property of a target as a short pytest file of its own

Exit status: 0 when every impl column holds and every known bug is caught, 1 otherwise, 2 for a
usage error (one line naming the option and what it allows, before any work).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import get_args
from unittest.mock import patch

from parity.safety.interrupts import run_interruptible
from parity.safety.threads import freeze_heap, wait_passively

wait_passively()  # before parity.devices imports torch

from parity.contracts import checked_interface  # noqa: E402
from parity.devices import (  # noqa: E402
    DEVICES,
    TRAINER_DTYPES,
    check_dtype_runs_on,
    check_ranks_fit,
    ranks_fit,
    resolve_device,
)
from parity.safety.bounds import TEST_BOUND_ENV, described  # noqa: E402
from parity.safety.releases import UnsupportedRelease, check_supported, install_command  # noqa: E402
from parity.safety.usage import check_at_least, check_distinct_outputs, check_output_path, write_atomically  # noqa: E402
from parity.targets import (  # noqa: E402
    Interface,
    TargetLoadError,
    UnknownTargetError,
    default_targets,
    get_target,
    listed_targets,
)


def _progress(message: str) -> None:
    print(f"[parity] {message} ...", file=sys.stderr, flush=True)


def _note(message: str) -> None:
    """A line for the reader on stderr (where a file went, what a flag did), never mixed into the report."""
    print(f"[parity] {message}", file=sys.stderr, flush=True)


def report_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    """The report's options, on ``parser`` (the ``report`` subcommand) or a parser of their own."""
    from parity.table.scenario import ALL_SCENARIOS as SCENARIOS

    parser = parser or argparse.ArgumentParser(prog="python -m parity report", description=REPORT_HELP)
    parser.add_argument("--device", default="cpu", choices=[*DEVICES, "auto"], help="default: cpu")
    parser.add_argument("--dtype", default="float32", choices=TRAINER_DTYPES,
                        help="working dtype (default: float32; float16 on cuda, as TrainingArguments(fp16=True))")
    parser.add_argument("--seed", type=int, default=0, help="model and data seed of the scenarios (default: 0)")
    parser.add_argument(
        "--target", action="append", default=[], metavar="NAME", help="an extra column (repeatable), e.g. an installed target"
    )
    parser.add_argument("--only", action="append", choices=sorted(SCENARIOS), metavar="NAME",
                        help=f"run only this scenario (repeatable): {', '.join(SCENARIOS)}")
    ddp = parser.add_mutually_exclusive_group()
    ddp.add_argument("--ddp", action="store_true",
                     help="run the two-rank distributed cases, and refuse where two ranks do not fit (default: run them "
                     "where they fit: two CPU cores, or two GPUs on cuda)")
    ddp.add_argument("--no-ddp", action="store_true", help="skip the two-rank distributed cases")
    parser.add_argument("--examples", type=int, default=3, metavar="N",
                        help="drawn examples per property in the `properties` scenario (default: 3)")
    parser.add_argument("--bound", type=int, metavar="S", default=None,
                        help="a scenario of a target of yours ends after S s, each target call 5 to 30 s sooner "
                             "(a tenth of S); 0: none (default: $PARITY_TEST_BOUND_S, else 300)")
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    parser.add_argument("--quiet", action="store_true",
                        help="print only the verdict line, what is wrong and the unexpected failures (no progress)")
    parser.add_argument("--controls", action="store_true",
                        help="show the built-in controls (impl, the known bugs) in full, not one line each")
    parser.add_argument("--show-warnings", action="store_true",
                        help="print third-party warnings and log records as they come (default: counted, one line "
                        "per distinct message at the end)")
    parser.add_argument("--markdown", metavar="PATH", help="also write the report as GitHub Markdown (e.g. $GITHUB_STEP_SUMMARY)")
    parser.add_argument("--html", metavar="PATH", help="also write one self-contained page with plots (needs the [report] extra)")
    parser.add_argument("--nemotron-remote-code", metavar="FOLDER|ORG/NAME[@REV]", default=None,
                        help="build the oracle model from NVIDIA's remote code: a local folder (config.json and *.py) or "
                             "a Hub id read through the Hugging Face cache (default: $PARITY_NEMOTRON_REMOTE_CODE)")
    parser.add_argument("--require-pinned-revision", action="store_true",
                        help="refuse a --nemotron-remote-code Hub id whose revision is not a commit hash")
    return parser


def use_remote_code(parser: argparse.ArgumentParser, args: argparse.Namespace) -> tuple[str, ...] | None:
    """Set up NVIDIA's code as the oracle once, before any scenario (``oracle.remote_code.activate_remote_code``)
    and name it on stdout (unless --quiet); its provenance lines (none for the built-in model), or None
    after one line on stderr when it cannot be."""
    from oracle.remote_code import RemoteCodeError, activate_remote_code

    try:
        source = activate_remote_code(args.nemotron_remote_code, args.require_pinned_revision)
    except (RemoteCodeError, ValueError) as error:
        print(f"{parser.prog}: error: {error}", file=sys.stderr)
        return None
    if source is None:
        return ()
    if source.unpinned_warning():
        print(f"{parser.prog}: warning: {source.unpinned_warning()}", file=sys.stderr)
    if not args.quiet:
        print("\n".join(source.describe()), flush=True)
    return tuple(source.describe())


OUTPUTS = ("json", "markdown", "html")


def report(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    from parity.report.model import as_json
    from parity.report.text import format_report
    from parity.safety.third_party import captured, summary_lines

    freeze_heap()  # the report runs many trainers, each ending in a full gc.collect() (parity.safety.threads)
    # Counting starts before any target, remote code, tokenizer or model is loaded, so what third-party code says
    # while loading is counted and shown once at the end, and the report's first line is its own (docs/report.md, Warnings).
    with captured(on=not args.show_warnings) as tally:
        ran = _checked_and_run(parser, args)
    if isinstance(ran, int):  # refused in one line, and only that line (--show-warnings shows what was said before)
        return ran
    results, options = ran
    status = 0 if all(result.as_expected for result in results) else 1
    emit("\n".join([format_report(results, quiet=args.quiet, controls=args.controls),
                    *([] if args.quiet else summary_lines(tally))]))
    writers = {"json": lambda: as_json(results, options, tally), "markdown": lambda: _markdown(results, options),
               "html": lambda: _html(results, options)}
    for name in OUTPUTS:
        if path := getattr(args, name):
            write_atomically(path, writers[name]())
            _note(f"wrote {path} ({name})")
    return status


def _checked_and_run(parser: argparse.ArgumentParser, args: argparse.Namespace):
    """The report's options checked (a usage error exits 2 before any work), the oracle set up and every scenario
    run: (the results, the options), or the exit status of a refusal already said in one line."""
    from parity.report.model import Options

    try:
        device = resolve_device(args.device)
        check_dtype_runs_on(args.dtype, device)
        if args.ddp:
            check_ranks_fit(device, 2)
        ddp = args.ddp or (not args.no_ddp and ranks_fit(device, 2))
        check_at_least("--seed", args.seed, 0)
        check_at_least("--examples", args.examples, 1)
        if args.bound is not None:
            check_at_least("--bound", args.bound, 0)
        outputs = {f"--{name}": getattr(args, name) for name in OUTPUTS}
        for field, path in outputs.items():
            if path is not None:
                check_output_path(field, path)
        check_distinct_outputs(outputs)
        extra = []
        for name in args.target:  # a selected target brings its companion (megatron-core and its fix)
            selected = get_target(name)
            check_supported(selected.requires)
            extra += [selected, *([get_target(selected.companion)] if selected.companion else [])]
        from parity.contracts import preflight

        for target in dict.fromkeys(extra):
            preflight(target, args.seed)
    except (ValueError, TypeError, UnknownTargetError, TargetLoadError, UnsupportedRelease) as error:
        parser.error(str(error))
    # Installed and optional targets are columns only when selected (parity.targets, docstring); every target the
    # repository ships (impl, the logits trainer) is a column, under test unless a target of yours is named.
    shipped = [t for t in default_targets().values() if not t.is_known_bug]
    builtin = [t for t in default_targets().values() if t.is_known_bug] + shipped
    targets = builtin + [t for t in extra if t not in builtin]
    under_test = tuple(dict.fromkeys(t.name for t in extra)) or tuple(t.name for t in shipped)
    if args.html and (problem := html_unavailable()):
        print(f"{parser.prog}: {problem}", file=sys.stderr)
        return 2
    oracle = use_remote_code(parser, args)
    if oracle is None:  # one line, no usage text, no traceback
        return 2
    options = Options(device=device, dtype=args.dtype, seed=args.seed, ddp=ddp, examples=args.examples, oracle=oracle,
                      under_test=under_test, controls=args.controls)
    with patch.dict(os.environ, {TEST_BOUND_ENV: str(args.bound)} if args.bound is not None else {}):
        return _run(args, targets, options), options


def _run(args: argparse.Namespace, targets: list, options) -> list:
    from parity.devices import make_deterministic
    from parity.report.scenarios import run_report
    from parity.table.scenario import ALL_SCENARIOS

    if not args.quiet:
        source = "--bound" if args.bound is not None else "$PARITY_TEST_BOUND_S" if os.environ.get(TEST_BOUND_ENV) else "the default"
        _note(f"bounds: {described('a scenario of a target of yours', source)}")
        for name in args.target:
            if name in default_targets():
                _note(f"--target {name} is a built-in column of every report: shown first and in full, as a target under test")
    make_deterministic(options.device)
    return run_report(targets, options, args.only, (lambda message: None) if args.quiet else _progress, ALL_SCENARIOS)


def _markdown(results, options) -> str:
    from parity.report.markdown import format_markdown

    return format_markdown(results, options)


def _html(results, options) -> str:
    from parity.report.html import format_html

    return format_html(results, options)


def emit(text: str) -> None:
    """Print the report; a reader that closed the pipe (``| head``) ends it quietly: the exit status
    stays the verdict's."""
    try:
        print(text, flush=True)
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so the interpreter's last flush is silent


def html_unavailable() -> str | None:
    """Why ``--html`` cannot be written here (one line naming the extra), checked before any scenario runs."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return f"--html draws its plots with matplotlib: {install_command('matplotlib')}"
    return None


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
    from parity.training.distributed import RankFailed, launch

    try:
        device = resolve_device(args.device)
        check_dtype_runs_on(args.dtype, device)
        check_ranks_fit(device, args.world_size)
        check_at_least("--draw", args.draw, 0)
        check_at_least("--draw-seed", args.draw_seed, 0)
        if args.json:
            check_output_path("--json", args.json)
        target = get_target(args.target)
        checked_interface(target, "trainer")
    except (ValueError, TypeError, UnknownTargetError, LookupError) as error:
        parser.error(str(error))
    with tempfile.TemporaryDirectory(prefix="parity-ddp-cli-") as workdir:
        verdicts, progress = f"{workdir}/verdicts.json", f"{workdir}/progress"
        arguments = ["--target", args.target, "--device", device, "--dtype", args.dtype, "--json", verdicts,
                     "--progress", progress]
        if args.draw:
            arguments += ["--draw", str(args.draw), "--draw-seed", str(args.draw_seed)]
        try:
            follow(lambda: launch("parity.training.ddp_cases", arguments, args.world_size, timeout_s=args.timeout), progress,
                   lambda line: _progress(f"ddp: {target.name}: {line}"))
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
        _note(f"wrote {args.json} (json)")
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

    return fuzz_main(parser, args, _progress)


def repro(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    from parity.fleet.repro import repro_main

    return repro_main(parser, args, _progress)


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


def cli_parser() -> argparse.ArgumentParser:
    """One parser; ``--help`` lists the subcommands and the report's options (the command that runs
    without one), ``python -m parity CMD --help`` each command's."""
    from importlib.metadata import version

    from parity.fleet.bench import add_bench_arguments
    from parity.fleet.fuzz import add_fuzz_arguments, add_replay_arguments
    from parity.fleet.repro import add_repro_arguments

    parser = argparse.ArgumentParser(prog="python -m parity", description="the one-command parity verdict before a pull request",
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"parity-harness {version('parity-harness')}")
    commands = parser.add_subparsers(dest="command", metavar="{" + ",".join(COMMANDS) + "}")
    for name, (run, help_text) in COMMANDS.items():
        sub = commands.add_parser(name, help=help_text, description=help_text, prog=f"python -m parity {name}")
        sub.set_defaults(run=run, parser=sub)
    report_parser(commands.choices["report"])
    add_bench_arguments(commands.choices["bench"])
    add_fuzz_arguments(commands.choices["fuzz"])
    add_replay_arguments(commands.choices["replay"])
    add_repro_arguments(commands.choices["repro"])
    ddp_parser = commands.choices["ddp"]
    ddp_parser.add_argument("--target", default="impl", metavar="NAME", help="target whose trainer runs (default: impl)")
    ddp_parser.add_argument("--device", default="cpu", choices=[*DEVICES, "auto"], help="Gloo on cpu, NCCL on cuda")
    ddp_parser.add_argument("--dtype", default="float32", choices=TRAINER_DTYPES,
                            help="working dtype (default: float32; float16 on cuda)")
    ddp_parser.add_argument("--world-size", type=int, default=2, choices=[2], help="ranks (default: 2)")
    ddp_parser.add_argument("--timeout", type=float, default=600.0, metavar="S", help="launcher timeout (default: 600)")
    ddp_parser.add_argument("--draw", type=int, default=0, metavar="N", help="also N cases drawn from --draw-seed")
    ddp_parser.add_argument("--draw-seed", type=int, default=0, metavar="S", help="seed of the drawn cases (default: 0)")
    ddp_parser.add_argument("--json", metavar="PATH", help="also write rank 0's verdicts as JSON")
    report_help = commands.choices["report"].format_help().split("\n\n", 2)[-1]  # after its usage and description
    report_options = "\n".join(line for line in report_help.splitlines() if not line.lstrip().startswith("-h, --help"))
    parser.epilog = f"without a command, `report` runs; its {report_options}\n"
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["--replay"]:  # python -m parity --replay ...: the replay command
        argv[0] = "replay"
    if not argv or (argv[0] not in COMMANDS and argv[0] not in ("-h", "--help", "--version")):
        argv = ["report", *argv]
    args = cli_parser().parse_args(argv)
    try:  # before any work, in one line (docs/install.md, Supported releases)
        check_supported("transformers")
    except UnsupportedRelease as error:
        print(f"{args.parser.prog}: {error}", file=sys.stderr)
        return 2
    return run_interruptible(lambda: args.run(args.parser, args))  # Ctrl-C, SIGTERM: 130, 143 (docs/faults.md)


if __name__ == "__main__":
    sys.exit(main())
