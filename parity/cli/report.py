"""``python -m parity [report]``: its options checked before any work, the oracle set up, every scenario run, and
the verdict written (docs/report.md)."""

from __future__ import annotations

import argparse
import os
import sys
from unittest.mock import patch

from parity.cli.output import emit, note, progress
from parity.devices import check_dtype_runs_on, check_ranks_fit, ranks_fit, resolve_device
from parity.safety.bounds import TEST_BOUND_ENV, described
from parity.safety.releases import UnsupportedRelease, check_supported, install_command
from parity.safety.threads import freeze_heap
from parity.safety.usage import check_at_least, check_distinct_outputs, check_output_path, write_atomically
from parity.targets import TargetLoadError, UnknownTargetError, default_targets, get_target

OUTPUTS = ("json", "markdown", "html")


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
            note(f"wrote {path} ({name})")
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
        source = ("--bound" if args.bound is not None else "$PARITY_TEST_BOUND_S" if os.environ.get(TEST_BOUND_ENV)
                  else "the default")
        note(f"bounds: {described('a scenario of a target of yours', source)}")
        for name in args.target:
            if name in default_targets():
                note(f"--target {name} is a built-in column of every report: shown first and in full, as a target under test")
    make_deterministic(options.device)
    return run_report(targets, options, args.only, (lambda message: None) if args.quiet else progress, ALL_SCENARIOS)


def _markdown(results, options) -> str:
    from parity.report.markdown import format_markdown

    return format_markdown(results, options)


def _html(results, options) -> str:
    from parity.report.html import format_html

    return format_html(results, options)


def html_unavailable() -> str | None:
    """Why ``--html`` cannot be written here (one line naming the extra), checked before any scenario runs."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return f"--html draws its plots with matplotlib: {install_command('matplotlib')}"
    return None

