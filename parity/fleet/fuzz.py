"""``python -m parity fuzz``: the property suite against one target as a HypoFuzz campaign (docs/fleet.md).

HypoFuzz (AGPL-3.0; the user installs it: ``pip install hypofuzz``, or ``tox -e fuzz``) runs a pytest
suite's Hypothesis tests as a coverage-guided campaign on N processes that share the profile's example
database. It is never imported here: the campaign is its own process, ``hypothesis fuzz``, given the
target's properties, the ``nightly`` profile and the shared database read and written, and stopped
when its time is up. What it found is then replayed by pytest from that database (``--parity-replay``),
so a counterexample is reported in the suite's own words, the same ``ParityFailure``.

HypoFuzz 25.11's hub looks at its workers once a minute and stops, as when every test has failed,
if none has yet finished a batch of 100 inputs: with examples that take more than about half a second
a campaign ends after its first minute. So the launcher runs rounds until the time is spent; the
shared database carries each round's corpus and finds to the next.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

#: A round shorter than this would spend its time collecting the tests (importing torch) alone.
MIN_ROUND_S = 30.0
#: How long a stopped round has to exit before its processes are killed.
STOP_GRACE_S = 10.0
#: ``hypothesis fuzz`` ends a round on its own with this status (its hub is done); any other is a failure.
ROUND_DONE = 1
NOT_INSTALLED = (
    "python -m parity fuzz runs HypoFuzz, which is not installed here: pip install hypofuzz "
    "(AGPL-3.0, an optional tool run as its own process), or run tox -e fuzz"
)


class CampaignFailed(RuntimeError):
    """``hypothesis fuzz`` stopped on an error of its own (it collected nothing, a usage error)."""


def hypothesis_cli() -> str | None:
    """The ``hypothesis`` command of this interpreter's environment, when HypoFuzz is installed there."""
    if importlib.util.find_spec("hypofuzz") is None:
        return None
    return shutil.which("hypothesis", path=str(Path(sys.executable).parent)) or shutil.which("hypothesis")


def suite_arguments(target: str, test_names: list[str]) -> list[str]:
    """pytest's arguments: the property suite against ``target``, only ``test_names``."""
    return ["--pyargs", "parity.suite", "-p", "parity", "-p", "no:cacheprovider", "--parity-target", target,
            "-k", " or ".join(test_names)]  # fmt: skip


def database_environment(database: str, mode: str) -> dict[str, str]:
    """The database setting for pytest's processes, through the environment: a directory named on
    pytest's command line would count among the paths pytest chooses its rootdir from, which name
    the tests, which Hypothesis keys the examples by (docs/fleet.md, Keys)."""
    from parity.fleet.database import DATABASE_ENV, MODE_ENV

    return {**os.environ, DATABASE_ENV: database, MODE_ENV: mode}


def campaign(
    command: list[str], seconds: float, log, progress: Callable[[str], None], min_round_s: float = MIN_ROUND_S,
    processes: int = 1, env: dict[str, str] | None = None,
) -> int:
    """Rounds of ``command`` (``hypothesis fuzz ...``) until ``seconds`` are spent; the rounds run.
    No process of a round outlives it, whether it ends on time, on its own or on an interrupt."""
    # The plugin gives each process its share of the cores, counted as for xdist's workers (parity.safety.threads).
    env = {**(env or os.environ), "PYTEST_XDIST_WORKER_COUNT": str(processes)}
    deadline = time.monotonic() + seconds
    rounds = 0
    while rounds == 0 or (left := deadline - time.monotonic()) > min_round_s:
        rounds += 1
        left = deadline - time.monotonic()
        progress(f"fuzz round {rounds}, {left:.0f} s left")
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=env)
        try:
            status = process.wait(timeout=max(left, 0.0))
        except subprocess.TimeoutExpired:
            status = None
        finally:
            stop(process)
        if status is not None and status != ROUND_DONE:
            raise CampaignFailed(f"hypothesis fuzz stopped with exit status {status}")
    return rounds


def stop(process: subprocess.Popen) -> None:
    """End a round's process group: HypoFuzz's hub, its manager and its workers."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=STOP_GRACE_S)
    with contextlib.suppress(ProcessLookupError):  # whatever of the group is left
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def fuzz_command(cli: str, processes: int, pytest_args: list[str]) -> list[str]:
    # HypoFuzz fuzzes only tests that are not derandomized and use the profile's database: the nightly profile.
    return [cli, "fuzz", "-n", str(processes), "--no-dashboard", "--", "--hypothesis-profile", "nightly", *pytest_args]


def replay(pytest_args: list[str], database: str) -> int:
    """pytest on the saved examples alone, the database read-only: a counterexample fails here with the
    suite's own message."""
    command = [sys.executable, "-m", "pytest", "-q", *pytest_args, "--parity-replay"]
    return subprocess.call(command, env=database_environment(database, "read-only"))


# --- the two commands: python -m parity fuzz / replay ------------------------------------------------

#: Where a campaign keeps its examples when no database is named: a directory beside Hypothesis's own.
DEFAULT_DATABASE = ".hypothesis/fleet"
DEFAULT_LOG = ".hypothesis/fuzz.log"


def add_replay_arguments(parser) -> None:
    from parity.fleet.database import DATABASE_ENV

    parser.add_argument("--target", default="impl", metavar="NAME", help="the target whose examples replay (default: impl)")
    parser.add_argument("--database", default=os.environ.get(DATABASE_ENV) or DEFAULT_DATABASE,
                        metavar="PATH|redis://HOST:PORT/DB|github-artifact://OWNER/REPO[/ARTIFACT]",
                        help=f"the shared example database (default: ${DATABASE_ENV}, else {DEFAULT_DATABASE})")
    parser.add_argument("--property", action="append", default=[], metavar="NAME",
                        help="only this property of the table (repeatable; default: every one the target has)")


def add_fuzz_arguments(parser) -> None:
    add_replay_arguments(parser)
    parser.add_argument("--seconds", type=float, default=600.0, metavar="S", help="the campaign's time (default: 600)")
    parser.add_argument("--processes", type=int, default=os.cpu_count() or 1, metavar="N",
                        help="HypoFuzz worker processes (default: the machine's cores)")
    parser.add_argument("--log", default=DEFAULT_LOG, metavar="PATH", help=f"HypoFuzz's own output (default: {DEFAULT_LOG})")


def _selected(parser, args, mode: str) -> list[str]:
    """pytest's arguments for the target's selected properties, every value checked (usage errors, exit 2)."""
    from parity.fleet.database import DatabaseSettingError, database_setting
    from parity.table.rows import PROPERTIES
    from parity.targets import UnknownTargetError, get_target

    try:
        target = get_target(args.target)
        database_setting(args.database, mode, "nightly")
    except (UnknownTargetError, DatabaseSettingError) as error:
        parser.error(str(error))
    names = {prop.name: prop for prop in PROPERTIES}
    unknown = [name for name in args.property if name not in names]
    if unknown:
        parser.error(f"--property {unknown[0]!r} is not a property of the table; known: {', '.join(names)}")
    chosen = [names[name] for name in args.property] or [prop for prop in PROPERTIES if prop.applies_to(target)]
    if not_applicable := [prop.name for prop in chosen if not prop.applies_to(target)]:
        parser.error(f"--property {not_applicable[0]}: {names[not_applicable[0]].why_not(target)}")
    if not chosen:
        parser.error(f"target {target.name!r} has no property of the table to run")
    return suite_arguments(target.name, [prop.test_name for prop in chosen])


def replay_main(parser, args) -> int:
    """0 when no saved example fails (or none is saved), 1 when one does, printed as the suite prints it."""
    return replay(_selected(parser, args, "read-only"), args.database)


def fuzz_main(parser, args, progress: Callable[[str], None]) -> int:
    """The campaign, then the replay: 0 when nothing was found, 1 when a saved example fails."""
    if args.seconds <= 0:
        parser.error(f"--seconds must be > 0, got {args.seconds}")
    if args.processes < 1:
        parser.error(f"--processes must be >= 1, got {args.processes}")
    writing = _selected(parser, args, "read-write")
    cli = hypothesis_cli()
    if cli is None:
        print(f"{parser.prog}: {NOT_INSTALLED}", file=sys.stderr)
        return 2
    Path(args.log).parent.mkdir(parents=True, exist_ok=True)
    try:
        with open(args.log, "ab") as log:
            rounds = campaign(fuzz_command(cli, args.processes, writing), args.seconds, log, progress,
                              processes=args.processes, env=database_environment(args.database, "read-write"))
    except CampaignFailed as error:
        print(f"{parser.prog}: {error}; its output is in {args.log}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{parser.prog}: interrupted; the campaign's processes are stopped", file=sys.stderr)
        return 130
    progress(f"{rounds} round(s) of HypoFuzz done (its output: {args.log}); replaying what {args.database} holds")
    return replay_main(parser, args)
