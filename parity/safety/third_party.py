"""Third-party warnings and log records, counted instead of printed as they come (docs/report.md, Warnings).

A report builds many models: NVIDIA's remote code under transformers 5.24 makes transformers say the
same dozen things (rope keys it does not know, deprecations, undocumented arguments) for every model,
about 750 lines around a passing report of 100. Nothing is learned from the second copy. So while
``python -m parity`` runs its scenarios, every warning (the ``warnings`` module) and every log record
at WARNING or above (the ``logging`` module: transformers, torch, accelerate, a target's own package)
that does not come from the harness itself is counted by its source and message, and the report ends
with one line per distinct message. So is a line third-party code prints to stdout: transformers prints its
docstring checks (``[ERROR] `past_key_values` is part of ...'s signature, but not documented``) when a
model's code is imported, NVIDIA's remote code included. The report starts counting before it loads any
target, remote code, tokenizer or model, so a passing report's first line is the harness's own.
``--show-warnings`` turns the capture off. pytest is left alone: it keeps its own warning summary.

A target of yours runs in a child process (``parity.report.isolation``): the child counts into a fresh
tally and sends it back with its result, so its warnings are counted once, in the parent.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import warnings
from collections import Counter
from collections.abc import Iterator

#: Set while a capture is on, so that a spawned child (a fresh interpreter) counts too.
CAPTURE_ENV = "PARITY_CAPTURE_THIRD_PARTY"
#: The harness's own code: its warnings and log records are its words, printed as they come.
HARNESS_PACKAGES = ("parity", "oracle", "impl")
#: What a distinct message is: its source and its first line, at most this long.
MESSAGE_WIDTH = 160

_tally: Counter | None = None  # (source, message) -> count, while a capture is on


def _source_of_module(module: str) -> str:
    return module.partition(".")[0] or "python"


def _is_harness(source: str) -> bool:
    return source in HARNESS_PACKAGES


def _first_line(message: object) -> str:
    line = next((part for part in str(message).strip().splitlines() if part.strip()), "")
    return line if len(line) <= MESSAGE_WIDTH else line[: MESSAGE_WIDTH - 3] + "..."


def _module_of(filename: str) -> str:
    """The top-level package a warning's file belongs to: ``.../site-packages/transformers/x.py`` is
    transformers; a file outside any package is named by itself."""
    parts = os.path.normpath(filename).split(os.sep)
    for marker in ("site-packages", "dist-packages"):
        if marker in parts:
            rest = parts[parts.index(marker) + 1:]
            return rest[0].removesuffix(".py") if rest else "python"
    for package in HARNESS_PACKAGES:
        if package in parts[:-1]:
            return package
    return os.path.basename(filename).removesuffix(".py") or "python"


def _printed_by(filename: str) -> str | None:
    """The third-party package whose code at ``filename`` printed a line, or None: the harness's own words,
    Python's library (a debugger, ``traceback``) and a script's pass through. Installed packages and the remote
    code transformers copies into its module cache are third-party."""
    parts = os.path.normpath(filename).split(os.sep)
    source = _module_of(filename)
    installed = any(marker in parts for marker in ("site-packages", "dist-packages", "transformers_modules"))
    return source if installed and not _is_harness(source) else None


class _CountedStdout:
    """``sys.stdout`` while a capture is on: each line third-party code prints is counted by its package, as a
    log record is; every other write passes through to the stream it wraps."""

    def __init__(self, stream) -> None:
        self.stream = stream
        self._open: dict[str, str] = {}  # source -> the start of a line it has not ended yet

    def write(self, text: str) -> int:
        source = _printed_by(sys._getframe(1).f_code.co_filename)  # print() is C: the frame above is its caller
        if source is None:
            return self.stream.write(text)
        *lines, rest = (self._open.pop(source, "") + text).split("\n")
        for line in lines:
            if line.strip():
                count(source, line)
        if rest:
            self._open[source] = rest
        return len(text)

    def close_lines(self) -> None:
        """Count the lines a source left without their newline."""
        for source, rest in self._open.items():
            if rest.strip():
                count(source, rest)
        self._open.clear()

    def __getattr__(self, name: str):
        return getattr(self.stream, name)


def _call_handlers(logger: logging.Logger, record: logging.LogRecord, _original=logging.Logger.callHandlers) -> None:
    """``Logger.callHandlers`` while a capture is on: every record, whichever logger and handler (transformers
    keeps a stream handler of its own, made whenever it is first imported), passes here once."""
    source = _source_of_module(record.name)
    if _tally is not None and record.levelno >= logging.WARNING and not _is_harness(source):
        count(source, record.getMessage())
    else:
        _original(logger, record)


def count(source: str, message: object) -> None:
    """One more of ``message`` from ``source`` in the tally (a no-op with no capture on)."""
    if _tally is not None:
        _tally[(source, _first_line(message))] += 1


def counts() -> Counter:
    """What the capture on has counted so far (empty with none)."""
    return Counter(_tally or {})


def merge(more: Counter | None) -> None:
    """Add a child's tally to this process's."""
    if _tally is not None and more:
        _tally.update(more)


def restart_in_child() -> None:
    """In a forked child: count from zero (the parent keeps what it counted), or start counting in a
    spawned one when its parent was."""
    global _tally
    if _tally is not None:
        _tally = Counter()
    elif os.environ.get(CAPTURE_ENV):
        _start()


def _start() -> None:
    """Start counting for the rest of this process (a spawned child's whole life)."""
    global _tally
    _tally = Counter()
    logging.Logger.callHandlers = _call_handlers
    sys.stdout = _CountedStdout(sys.stdout)
    warnings.simplefilter("always")
    warnings.showwarning = _show_warning


def _show_warning(message, category, filename, lineno, file=None, line=None, _original=warnings.showwarning):
    source = _module_of(filename)
    if _is_harness(source):
        _original(message, category, filename, lineno, file, line)
    else:
        count(source, f"{category.__name__}: {message}")


@contextlib.contextmanager
def captured(on: bool = True) -> Iterator[Counter]:
    """Count third-party warnings, log records and printed lines while the block runs, instead of printing them;
    the counter it yields holds the tally when the block ends. ``on=False``: nothing changes (``--show-warnings``)."""
    global _tally
    if not on:
        yield Counter()
        return
    result, outer, calling = Counter(), _tally, logging.Logger.callHandlers
    _tally = Counter()
    os.environ[CAPTURE_ENV] = "1"
    stdout = _CountedStdout(sys.stdout)
    try:
        logging.Logger.callHandlers = _call_handlers
        sys.stdout = stdout
        with warnings.catch_warnings():
            warnings.simplefilter("always")  # every copy counted, not only the first per place
            original = warnings.showwarning
            warnings.showwarning = lambda *args, **kwargs: _show_warning(*args, **kwargs, _original=original)
            yield result
    finally:
        stdout.close_lines()
        if sys.stdout is stdout:  # else whoever replaced it since restores their own
            sys.stdout = stdout.stream
        logging.Logger.callHandlers = calling
        result.update(_tally)
        _tally = outer
        os.environ.pop(CAPTURE_ENV, None)


def summary_lines(tally: Counter) -> list[str]:
    """One line per distinct message, the most frequent first: ``transformers: 96 x Unrecognized keys ...``."""
    if not tally:
        return []
    total = sum(tally.values())
    lines = [f"third-party warnings and log records: {total} ({len(tally)} distinct; --show-warnings prints them as they come)"]
    for (source, message), number in sorted(tally.items(), key=lambda item: (-item[1], item[0])):
        lines.append(f"  {source}: {number} x {message}")
    return lines
