"""What a rank that ``parity.training.launch.processes.launch`` started does before anything else (docs/faults.md, Ranks).

``python -m parity.training.launch.rank_start MODULE ARGS...``: before the module (and torch) is imported, the rank
arms a parent-death signal, so it cannot outlive the launcher, and lets the launcher ask for its stacks
(faulthandler on ``SIGUSR1``). Then it runs ``python -m MODULE ARGS...``; an exception that ends it is
written where the launcher reads it, and the rank exits at once, before any further collective: its peer,
left waiting, cannot time out first and take the blame.
"""

from __future__ import annotations

import faulthandler
import os
import runpy
import signal
import sys
import traceback
from pathlib import Path

from parity.safety.parent_death import die_with_parent

#: The launcher's pid: a rank whose parent is not this process any more exits at once.
LAUNCHER_ENV = "PARITY_LAUNCHER_PID"
#: The folder a rank writes its own error into (``rank<N>.error``) before it exits.
ERRORS_ENV = "PARITY_RANK_ERRORS"


def die_with_launcher() -> None:
    """``PR_SET_PDEATHSIG`` (Linux): the kernel kills this process when the launcher dies, however it dies."""
    launcher = os.environ.get(LAUNCHER_ENV)
    if launcher is not None:
        die_with_parent(int(launcher))


def report(error: BaseException) -> None:
    """Write the rank's own error where the launcher reads it: one line naming it and where it was raised
    (a ``RankCrashed``'s own message: the target's crash as its verdict names it), then its traceback."""
    from parity.safety.crash import describe_raised

    described = str(error) if type(error).__name__ == "RankCrashed" else describe_raised(error)
    text = f"{described}\n{''.join(traceback.format_exception(error)[-12:])}"
    print(text, file=sys.stderr, flush=True)
    if folder := os.environ.get(ERRORS_ENV):
        Path(folder, f"rank{os.environ.get('RANK', '0')}.error").write_text(text)


def main() -> None:
    die_with_launcher()
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    module = sys.argv[1]
    sys.argv = [module, *sys.argv[2:]]
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    except SystemExit:
        raise
    except BaseException as error:  # noqa: BLE001 - every way a rank fails is reported, then it exits
        report(error)
        os._exit(1)


if __name__ == "__main__":
    main()
