"""Where a target raised, in the one form every verdict gives it (docs/design.md, Verdict kinds).

A crash is reported with the exception and the innermost frame, the place it was raised, with the
file shortened to what a reader finds: from the package root inside site-packages, or relative to
this repository. A target's ``known_crashes`` entries are matched against that form. Every call into
target code that is not a training run goes through :func:`call_target`, so every wing reports a
crash alike (docs/dataset.md, Crashes).
"""

from __future__ import annotations

import os
import signal
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from parity.bounds import bounded
from parity.targets import ConfigDeclined

_HARNESS_ROOT = Path(__file__).resolve().parent.parent


def short_path(filename: str) -> str:
    """A frame's file as a reader finds it (see the module docstring)."""
    marker = "site-packages" + os.sep
    if marker in filename:
        return filename.split(marker, 1)[1]
    try:
        return str(Path(filename).resolve().relative_to(_HARNESS_ROOT))
    except ValueError:
        return filename


def raised_where(error: BaseException) -> str:
    """``path:line (in function)`` of the innermost frame of the error's traceback."""
    frames = traceback.extract_tb(error.__traceback__)
    if not frames:
        return "<unknown>"
    frame = frames[-1]
    return f"{short_path(frame.filename)}:{frame.lineno} (in {frame.name})"


def signature(error: BaseException) -> str:
    """``ExceptionType at path:line (in function)``: what a target's ``known_crashes`` entries match."""
    return f"{type(error).__name__} at {raised_where(error)}"


def is_known(crash_signature: str, known: Sequence[str]) -> bool:
    """Whether a crash with this signature is one of ``known`` (substrings, ``/`` as the separator)."""
    crash_signature = crash_signature.replace(os.sep, "/")
    return any(entry in crash_signature for entry in known)


def describe_raised(error: BaseException) -> str:
    """``ExceptionType: message at path:line (in function)``."""
    return f"{type(error).__name__}: {str(error) or '(no message)'} at {raised_where(error)}"


class TargetCrashed(Exception):
    """The target itself raised: not a counterexample to a property, a crash (docs/dataset.md, Crashes).

    ``signature`` is ``"ExceptionType at path:line"`` (the innermost frame, i.e. where it was raised),
    which a target's ``known_crashes`` entries are matched against."""

    def __init__(self, error: BaseException, what: str) -> None:
        self.error = error
        self.where = raised_where(error)
        self.signature = signature(error)
        super().__init__(f"the target raised {describe_raised(error)} while {what}")


def call_target(what: str, function: Callable[..., Any], *args: Any) -> Any:
    """``function(*args)``, where ``function`` is target code, under the harness's call bound
    (``parity.bounds.bounded``: a hang ends in ``CallTimedOut`` naming the call). ``ConfigDeclined``
    passes through (the property skips the example); any other exception, ``AssertionError``
    included, becomes :class:`TargetCrashed` naming the exception and where it was raised."""
    try:
        with bounded(f"{call_name(function, args)} while {what}"):
            return function(*args)
    except ConfigDeclined:
        raise
    except Exception as error:
        raise TargetCrashed(error, what) from error


def process_ended(returncode: int) -> str:
    """How a process ended, from a ``subprocess.Popen`` return code (negative: the signal that killed it;
    ``os.waitstatus_to_exitcode`` gives the same from ``os.waitpid``): ``exited with status 3``,
    ``killed by SIGSEGV (signal 11)``."""
    if returncode >= 0:
        return f"exited with status {returncode}"
    try:
        name = signal.Signals(-returncode).name
    except ValueError:
        name = "an unknown signal"
    return f"killed by {name} (signal {-returncode})"


def call_name(function: Callable[..., Any], args: tuple[Any, ...]) -> str:
    """```__getitem__(7)```: the function's name and its arguments, plain values shown, others by type."""
    shown = [repr(a) if isinstance(a, (int, float, str, bool)) and len(repr(a)) <= 40 else type(a).__name__ for a in args]
    return f"`{getattr(function, '__name__', type(function).__name__)}({', '.join(shown)})`"


def is_known_crash(crash: TargetCrashed, known: tuple[str, ...]) -> bool:
    return is_known(crash.signature, known)
