"""What the CLI says besides its report: progress and notes on stderr, the report on stdout."""

from __future__ import annotations

import os
import sys


def progress(message: str) -> None:
    print(f"[parity] {message} ...", file=sys.stderr, flush=True)


def note(message: str) -> None:
    """A line for the reader on stderr (where a file went, what a flag did), never mixed into the report."""
    print(f"[parity] {message}", file=sys.stderr, flush=True)



def emit(text: str) -> None:
    """Print the report; a reader that closed the pipe (``| head``) ends it quietly: the exit status
    stays the verdict's."""
    try:
        print(text, flush=True)
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so the interpreter's last flush is silent

