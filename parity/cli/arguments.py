"""The CLI's argument parsing: one parser whose ``--help`` lists every command and the report's options (the command
that runs without one); each command's own options on its subparser."""

from __future__ import annotations

import argparse

from parity.cli.commands import COMMANDS, REPORT_HELP
from parity.devices import DEVICES, TRAINER_DTYPES


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

