"""``python -m parity``: the one-command verdict before a pull request.

    python -m parity                 every scenario, CPU, float32
    python -m parity --ddp           ... plus the two-rank cases
    python -m parity bench           how fast the suite finds each known bug
    python -m parity targets         the registered targets

Exit status: 0 when every impl column holds and every known bug is caught, 1 otherwise, 2 for a
usage error.
"""

from __future__ import annotations

import argparse
import sys

from parity.devices import DEVICES, resolve_device
from parity.targets import UnknownTargetError, all_targets, get_target

DTYPES = ("float32", "float64")
COMMANDS = ("report", "bench", "targets")


def _progress(message: str) -> None:
    print(f"[parity] {message} ...", file=sys.stderr, flush=True)


def report_parser() -> argparse.ArgumentParser:
    from parity.report import SCENARIOS

    parser = argparse.ArgumentParser(prog="python -m parity", description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", choices=[*DEVICES, "auto"], help="default: cpu")
    parser.add_argument("--dtype", default="float32", choices=DTYPES, help="working dtype (default: float32)")
    parser.add_argument("--seed", type=int, default=0, help="model and data seed of the scenarios (default: 0)")
    parser.add_argument(
        "--target", action="append", default=[], metavar="NAME", help="an extra column (repeatable), e.g. an installed target"
    )
    parser.add_argument("--only", action="append", choices=sorted(SCENARIOS), metavar="NAME",
                        help=f"run only this scenario (repeatable): {', '.join(SCENARIOS)}")
    parser.add_argument("--ddp", action="store_true", help="also run the two-rank distributed cases")
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    return parser


def report(argv: list[str]) -> int:
    from parity.report import Options, as_json, format_table, run_report

    parser = report_parser()
    args = parser.parse_args(argv)
    try:
        device = resolve_device(args.device)
        extra = [get_target(name) for name in args.target]
    except (ValueError, UnknownTargetError) as error:
        parser.error(str(error))
    builtin = [t for t in all_targets().values() if t.is_known_bug] + [get_target("impl")]
    targets = builtin + [t for t in extra if t not in builtin]
    options = Options(device=device, dtype=args.dtype, seed=args.seed, ddp=args.ddp)

    from parity.devices import make_deterministic

    make_deterministic(device)
    results = run_report(targets, options, args.only, _progress)
    print("\n\n".join(format_table(result) for result in results))
    as_expected = all(result.as_expected for result in results)
    print(f"\nparity: {'every impl column holds and every known bug is caught' if as_expected else 'UNEXPECTED verdicts above'}")
    if args.json:
        with open(args.json, "w") as handle:
            handle.write(as_json(results, options))
    return 0 if as_expected else 1


def targets(argv: list[str]) -> int:
    argparse.ArgumentParser(prog="python -m parity targets", description="list the registered targets").parse_args(argv)
    for target in all_targets().values():
        interfaces = ", ".join(i for i in ("dataset", "loss", "trainer") if target.provides(i))
        print(f"{target.name:28} expected to {target.expect:4}  [{interfaces}]  {target.description}")
    return 0


def bench(argv: list[str]) -> int:
    from parity.bench import bench_main

    return bench_main(argv)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in COMMANDS:
        return {"report": report, "bench": bench, "targets": targets}[argv[0]](argv[1:])
    return report(argv)


if __name__ == "__main__":
    sys.exit(main())
