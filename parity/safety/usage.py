"""Usage errors: bad input refused at the boundary, before any work, in one line naming the field
and what is allowed (docs/report.md, Usage errors).

The CLI prints ``python -m parity CMD: error: LINE`` and exits 2; the pytest plugin raises
``pytest.UsageError`` (exit 4). Output files are checked before the run and written atomically
(a temporary file beside the target, then a rename), so a failed or interrupted run leaves no half
file and never destroys the previous one.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


class UsageError(ValueError):
    """Input the harness refuses before any work; the message is one line naming the field."""


def check_at_least(field: str, value: int, minimum: int) -> int:
    """``value``, or a usage error naming ``field`` and the allowed range."""
    if value < minimum:
        raise UsageError(f"{field} must be an integer >= {minimum}, got {value}")
    return value


def check_output_path(field: str, path: str) -> Path:
    """``path`` as a file this run may write: not a directory, in an existing, writable folder.

    Checked before any scenario runs, so a typo never costs a whole run."""
    target = Path(path)
    folder = target.parent if str(target.parent) else Path(".")
    if target.is_dir():
        raise UsageError(f"{field} {path!r} is a directory; give a file path")
    if not folder.is_dir():
        raise UsageError(f"{field} {path!r}: the folder {str(folder)!r} does not exist")
    if not os.access(folder, os.W_OK | os.X_OK) or (target.exists() and not os.access(target, os.W_OK)):
        raise UsageError(f"{field} {path!r} is not writable")
    return target


def check_distinct_outputs(outputs: dict[str, str | None]) -> None:
    """Two output options naming one file would overwrite each other."""
    seen: dict[str, str] = {}
    for field, path in outputs.items():
        if path is None:
            continue
        key = os.path.realpath(path)
        if key in seen:
            raise UsageError(f"{field} and {seen[key]} name the same file {path!r}; give each its own")
        seen[key] = field


def write_atomically(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` to a temporary file in ``path``'s folder, then rename it over ``path``: readers
    see the old file or the whole new one, never a half-written one."""
    target = Path(path)
    handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent or ".")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
