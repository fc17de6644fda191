"""Where a target raised, in the one form every verdict gives it (docs/design.md, Verdict kinds).

A crash is reported with the exception and the innermost frame, the place it was raised, with the
file shortened to what a reader finds: from the package root inside site-packages, or relative to
this repository. A target's ``known_crashes`` entries are matched against that form. Every call into
target code that is not a training run goes through :func:`call_target`, so every wing reports a
crash alike (docs/dataset.md, Crashes).
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
import signal
import sysconfig
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from parity.safety.bounds import bounded

_HARNESS_ROOT = Path(__file__).resolve().parents[2]


class ConfigDeclined(Exception):
    """Raised by a target for a config it cannot express (e.g. megatron-core has no ``num_epochs``).

    The property skips that example; it is neither a pass nor a failure. Defined here, where every
    target call ends, and exported as ``parity.targets.ConfigDeclined``, the name a
    target raises: :func:`call_target` lets it pass as a decline, never as a crash."""


def short_path(filename: str) -> str:
    """A frame's file as a reader finds it (see the module docstring)."""
    marker = "site-packages" + os.sep
    if marker in filename:
        return filename.split(marker, 1)[1]
    try:
        return str(Path(filename).resolve().relative_to(_HARNESS_ROOT))
    except ValueError:
        return filename


#: Where a frame is the library's, not the target's: a crash raised there is located by the target's call into it.
_LIBRARIES = ("torch", "numpy", "transformers", "accelerate")
#: torch's DataLoader re-raises a worker's exception in the iterating process, the worker's traceback as text.
_WORKER_ERROR = re.compile(r"Caught \w+ in DataLoader worker process (\d+)\.\nOriginal Traceback")
_TEXT_FRAME = re.compile(r'^  File "(.+)", line (\d+), in (\S+)$', re.MULTILINE)


@functools.cache
def _library_roots() -> tuple[str, ...]:
    roots = [sysconfig.get_paths()["stdlib"], str(_HARNESS_ROOT / "parity")]
    for name in _LIBRARIES:
        spec = importlib.util.find_spec(name)  # found, not imported
        roots.extend((spec.submodule_search_locations or []) if spec else [])
    return tuple(str(root).rstrip(os.sep) + os.sep for root in roots)


def _frames(error: BaseException) -> list[tuple[str, int, str]]:
    """The error's frames, outermost first: for a DataLoader worker's error, the worker's own."""
    if _WORKER_ERROR.match(str(error)):
        return [(file, int(line), name) for file, line, name in _TEXT_FRAME.findall(str(error))]
    return [(frame.filename, frame.lineno, frame.name) for frame in traceback.extract_tb(error.__traceback__)]


def _place(frame: tuple[str, int, str]) -> str:
    return f"{short_path(frame[0])}:{frame[1]} (in {frame[2]})"


def raised_where(error: BaseException) -> str:
    """``path:line (in function)`` of the innermost frame of the error's traceback; where that frame is a
    library's (torch, Python's own), also the innermost frame of target code that called into it:
    ``torch/distributed/distributed_c10d.py:3252 (in all_reduce), called from impl/logits_trainer.py:98 (in
    window_count)``. A DataLoader worker's error is located in the worker (``..., in DataLoader worker 0``)."""
    frames = _frames(error)
    if not frames:
        return "<unknown>"
    where = _place(frames[-1])
    if frames[-1][0].startswith(_library_roots()):
        caller = next((f for f in reversed(frames) if not f[0].startswith(_library_roots())), None)
        where += f", called from {_place(caller)}" if caller else ""
    worker = _WORKER_ERROR.match(str(error))
    return where + (f", in DataLoader worker {worker[1]}" if worker else "")


#: The end of a line :func:`describe_raised` wrote: the function it was raised in, and the target's call into it.
_RAISED_AT = re.compile(r" at \S+ \(in (\w+)\)(?:, called from (\S+) \(in (\w+)\))?(?:, in DataLoader worker \d+)?$")


def raised_in(described: str) -> tuple[str, str | None, str | None] | None:
    """Read back from a line that ends as :func:`describe_raised` ends it (a rank's error file, say): the function
    raised in, and the target's ``(function, path:line)`` that called into it (None, None when raised in the target's
    own code); None when the line is not of that form."""
    match = _RAISED_AT.search(described)
    return (match[1], match[3], match[2]) if match else None


#: A whole line :func:`describe_raised` wrote: ``ExceptionType: message at path:line (in function)...``.
_DESCRIBED = re.compile(r"^(?P<type>[A-Za-z_][\w.]*): .* at (?P<where>\S+:\d+ \(in \w+\)(?:, called from .*)?)$")
#: Where the harness's own code lies: an error raised there is the harness's, never a target's crash.
_HARNESS = ("parity/", "oracle/")


def signature_of(described: str) -> str | None:
    """``ExceptionType at path:line (in function)`` read back from a line :func:`describe_raised` wrote in another
    process (a rank's error file), when it was raised outside the harness's own code: what a target's
    ``known_crashes`` match; None for any other line."""
    match = _DESCRIBED.match(described)
    if match is None or match["where"].startswith(_HARNESS):
        return None
    return f"{match['type']} at {match['where']}"


def _message(error: BaseException) -> str:
    """The error's message; for a DataLoader worker's, the worker's own (the last line of its traceback)."""
    text = str(error)
    if _WORKER_ERROR.match(text):
        text = text.rstrip().splitlines()[-1].partition(": ")[2]
    return text or "(no message)"


def signature(error: BaseException) -> str:
    """``ExceptionType at path:line (in function)``: what a target's ``known_crashes`` entries match."""
    return f"{type(error).__name__} at {raised_where(error)}"


def is_known(crash_signature: str, known: Sequence[str]) -> bool:
    """Whether a crash with this signature is one of ``known`` (substrings, ``/`` as the separator)."""
    crash_signature = crash_signature.replace(os.sep, "/")
    return any(entry in crash_signature for entry in known)


def describe_raised(error: BaseException) -> str:
    """``ExceptionType: message at path:line (in function)``."""
    return f"{type(error).__name__}: {_message(error)} at {raised_where(error)}"


class TargetCrashed(Exception):
    """The target itself raised: not a counterexample to a property, a crash (docs/dataset.md, Crashes).

    ``signature`` is ``"ExceptionType at path:line"`` (the innermost frame, i.e. where it was raised),
    which a target's ``known_crashes`` entries are matched against."""

    def __init__(self, error: BaseException, what: str) -> None:
        self.error = error
        self.where = raised_where(error)
        self.signature = signature(error)
        super().__init__(f"the target raised {describe_raised(error)} while {what}")


class TargetCrashedOnRank(TargetCrashed):
    """The target raised on a rank of a launch: the rank's own words are all this process has of it, its signature
    read back from them (:func:`signature_of`); judged as any :class:`TargetCrashed` is, known or not."""

    def __init__(self, message: str, signature: str):  # no error object here: it was raised in another process
        self.error, self.where, self.signature = None, signature.partition(" at ")[2], signature
        Exception.__init__(self, f"the target raised on a rank: {message}")


def call_target(what: str, function: Callable[..., Any], *args: Any) -> Any:
    """``function(*args)``, where ``function`` is target code, under the harness's call bound
    (``parity.safety.bounds.bounded``: a hang ends in ``CallTimedOut`` naming the call). ``ConfigDeclined``
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
