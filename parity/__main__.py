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

import sys

from parity.safety.interrupts import run_interruptible
from parity.safety.threads import wait_passively

wait_passively()  # before parity.devices imports torch

from parity.cli.arguments import cli_parser  # noqa: E402
from parity.cli.commands import COMMANDS  # noqa: E402
from parity.safety.releases import UnsupportedRelease, check_supported  # noqa: E402


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
