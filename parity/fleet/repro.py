"""A finding as an upstream bug report: a reproducer that needs only the target's own package
(docs/dataset.md, Reproducers; ``python -m parity repro``).

A maintainer upstream will not install a property harness to read a report. So for each property a
target fails, the property is hunted until Hypothesis has shrunk its counterexample, and the shrunk case
is written out as one short pytest file:

* a dataset property (``dataset/matches-oracle``, ``dataset/resume-agrees``) or the pipeline's
  ``pipeline/cache-key-separates-configs`` on megatron-core, impl or a target of yours: the documents as
  short arrays, the config as keyword arguments, the calls in the order that fails, the reference's
  values inlined (only the key and sample that differ first) and one assertion saying what differs.
  It imports the target's own package (megatron-core, impl, your module), numpy and torch, never parity;
* a loss or trainer property: the failing case pinned with ``@example`` and the target named, through
  the harness's public API (the reference there is a model run, not a few values).

Each file is checked before it is kept: it must fail on the target, and, for a built-in known bug, pass
on its fixed companion (``impl`` for impl's known bugs, the upstream fix for megatron-core's, patched in
by a ``conftest.py`` beside the file for that run only). The files themselves are written by
:mod:`parity.fleet.repro_files`; this module hunts, checks and keeps them. ``--from-last-run`` writes up the
failing examples a pytest run kept instead (:mod:`parity.fleet.kept_failures`), refusing any kept file that
is not honest data with one line each (exit 2), the others still written up.
"""

from __future__ import annotations

import shlex
import sys
import tempfile
from pathlib import Path

from parity.fleet.kept_failures import remembered_failures
from parity.fleet.repro_check import Reproducer, failure_line, run_file
from parity.fleet.repro_files import MEGATRON, slug, write_harness_reproducer, writer_for
from parity.targets import Target, get_target


# --- hunting, checking, keeping ---------------------------------------------------------------------


def hunted_subject(target: Target, prop):
    """What the hunt runs on: the target's interface, except where a known finding would hide another. megatron-core's
    pipeline serves its loss-mask cache bug in every build, so its cache-key finding is hunted on megatron's own
    GPTDataset with only the loss-mask fix (copy-on-FILL) applied; the file written still runs megatron as installed."""
    if target.name == "megatron-core" and prop.interface == "pipeline":
        import functools

        from parity.dataset.megatron import copy_on_fill, import_megatron
        from parity.dataset.megatron_pipeline import build_splits

        return functools.partial(build_splits, copy_on_fill(import_megatron().GPTDataset))
    return target.load(prop.interface)


def fixed_companion(target: Target) -> Target | None:
    """What a built-in known bug's reproducer must pass on: impl for impl's, the upstream fix for megatron-core."""
    if target.name == "megatron-core":
        return get_target("megatron-core:fixed")
    if target.is_known_bug and target.name.startswith("known-bug:"):
        return get_target("impl")
    return None


#: Beside a megatron-core reproducer, for the check on the fix only: the installed GPTDataset replaced by
#: the one the upstream fix makes (copy-on-FILL and the full cache key).
FIXED_MEGATRON_CONFTEST = '''
import megatron.core.datasets.gpt_dataset as gpt_dataset
from parity.dataset.megatron import fixed_class

gpt_dataset.GPTDataset = fixed_class()
'''


def write_reproducers(target: Target, out: Path, properties: list[str] | None = None, max_examples: int = 200,
                      say=print, kept: dict[str, dict] | None = None) -> list[Reproducer]:
    """Hunt each applicable property on ``target``; for each that fails, write, check and keep a reproducer.
    ``kept``: property -> failing arguments a pytest run kept (:func:`remembered_failures`), written up
    without hunting; the properties it does not name are left alone."""
    from parity.fleet.repro_loops import write_loop_reproducers, writes_up_loop
    from parity.table.rows import PROPERTIES

    out.mkdir(parents=True, exist_ok=True)
    written = []
    for prop in PROPERTIES:
        if properties and prop.name not in properties:
            continue
        writer = writer_for(prop)
        loop = writes_up_loop(prop, target)
        if (writer is None and not loop) or not prop.applies_to(target) or "cuda" == prop.devices[0]:
            continue
        if kept is not None:
            if prop.name not in kept:
                continue
            failing = kept[prop.name]
            say(f"{prop.name}: the last pytest run's failing example")
        else:
            say(f"{prop.name}: hunting")
            found = prop.hunt(hunted_subject(target, prop), max_examples=max_examples, target=target)
            if not found.found:
                say(f"{prop.name}: holds, nothing to write" if not found.crash else f"{prop.name}: crashed ({found.crash})")
                continue
            failing = found.failing_args[0]
        command = shlex.join(["python", "-m", "parity", "repro", "--target", target.name, "--property", prop.name,
                              "--out", str(out)])
        if loop:  # a field's own loop: a file per defect, needing only the library (parity.fleet.repro_loops)
            written += write_loop_reproducers(prop, target, failing, command, out, say)
            continue
        text = writer(prop, target, failing, command)
        if text is None:
            say(f"{prop.name}: fails, but not as one sample a file can show; run the suite for its report")
            continue
        path = out / f"test_{slug(target.name.replace(':', '_'))}__{slug(prop.name)}.py"
        path.write_text(text)
        result = run_file(path)
        companion = fixed_companion(target)
        passes = None
        if companion is not None:  # the same file building the fix (megatron's: patched in beside it, for this run)
            fixed_text = text if target.name in MEGATRON else writer(prop, target, failing, command, companion)
            with tempfile.TemporaryDirectory(prefix="parity-repro-fixed-") as folder:
                fixed_path = Path(folder) / path.name
                fixed_path.write_text(fixed_text)
                passes = run_file(fixed_path, FIXED_MEGATRON_CONFTEST if target.name in MEGATRON else None).returncode == 0
        reproducer = Reproducer(prop.name, path, writer is not write_harness_reproducer, result.returncode == 1, passes,
                                failure_line(result))
        if not reproducer.kept:
            path.unlink()
            say(f"{prop.name}: the written file did not reproduce (fails on the target: {reproducer.fails_on_target}, "
                f"passes on the fix: {passes}); not kept")
        else:
            say(f"{prop.name}: wrote {path} ({len(text.splitlines())} lines): {reproducer.message}")
        written.append(reproducer)
    return written


def add_repro_arguments(parser) -> None:
    parser.add_argument("--target", required=True, metavar="NAME", help="the target whose failures to write up")
    parser.add_argument("--property", action="append", default=[], metavar="NAME",
                        help="repeatable: only these properties (default: every one that has a writer)")
    parser.add_argument("--out", required=True, metavar="DIR", help="the folder the reproducers are written into")
    parser.add_argument("--examples", type=int, default=200, metavar="N",
                        help="examples each property's hunt may draw (default: 200)")
    parser.add_argument("--from-last-run", nargs="?", const=".pytest_cache", metavar="CACHE_DIR",
                        help="write up the failing examples a pytest run kept (in its cache folder, default .pytest_cache) "
                        "instead of hunting again")


def repro_main(parser, args, say) -> int:
    """Exit 0 when at least one reproducer was written and kept, 1 when none was (nothing failed, or no file
    reproduced), 2 for a usage error (before any work) or a kept file refused (after the others are written up)."""
    from parity.fleet.repro_loops import writes_up_loop
    from parity.safety.usage import check_at_least
    from parity.table.rows import PROPERTIES
    from parity.targets import TargetLoadError, UnknownTargetError

    try:
        target = get_target(args.target)
        check_at_least("--examples", args.examples, 1)
        known = {prop.name for prop in PROPERTIES if writer_for(prop) is not None or writes_up_loop(prop, target)}
        for name in args.property:
            if name not in known:
                raise ValueError(f"--property {name!r}: a reproducer is written for {', '.join(sorted(known))}")
        out = Path(args.out)
        if out.exists() and not out.is_dir():
            raise ValueError(f"--out {args.out!r} is a file, not a folder")
    except (ValueError, UnknownTargetError, TargetLoadError) as error:
        parser.error(str(error))
    last_run, refused = None, []
    if args.from_last_run is not None:
        last_run, refused = remembered_failures(Path(args.from_last_run), target)
        for line in refused:  # named, never loaded; the honest files are still written up (docs/security.md)
            print(f"{parser.prog}: refused {line}", file=sys.stderr)
        if not last_run:
            print(f"{parser.prog}: no {'other ' if refused else ''}failing example of {target.name} kept under {args.from_last_run} (run pytest "
                  f"--parity-target {target.name} first, with the cache plugin on)")
            return 2 if refused else 1
    kept = [r for r in write_reproducers(target, out, args.property or None, args.examples, say, last_run) if r.kept]
    for reproducer in kept:
        print(f"{reproducer.path}  ({'standalone' if reproducer.standalone else 'the harness public API'}): "
              f"{reproducer.message[:200]}")
    if not kept:
        print(f"{parser.prog}: no reproducer written for {target.name}: no property it has a writer for fails")
    return 2 if refused else 0 if kept else 1
