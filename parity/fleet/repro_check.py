"""A written reproducer checked as a maintainer would run it: ``pytest FILE`` in a folder of its own (a fix's
``conftest.py`` beside it where one is given), and what its failing assertion said. Shared by the dataset and
training reproducers (:mod:`parity.fleet.repro`) and the field's own loops' (:mod:`parity.fleet.repro_loops`)."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Reproducer:
    """One written file and what checking it found."""

    property: str
    path: Path
    standalone: bool
    fails_on_target: bool
    passes_on_fixed: bool | None  # None: no fixed companion to hold it to
    message: str

    @property
    def kept(self) -> bool:
        return self.fails_on_target and self.passes_on_fixed is not False


def run_file(path: Path, conftest: str | None = None, python: str = sys.executable) -> subprocess.CompletedProcess:
    """``pytest FILE`` in a folder of its own (with ``conftest`` beside it), as a maintainer runs it."""
    with tempfile.TemporaryDirectory(prefix="parity-repro-") as folder:
        copy = Path(folder) / path.name
        copy.write_text(path.read_text())
        if conftest:
            (Path(folder) / "conftest.py").write_text(conftest)
        return subprocess.run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:parity", copy.name],
                              cwd=folder, capture_output=True, text=True, timeout=600)


def failure_line(result: subprocess.CompletedProcess) -> str:
    """What the file's failing assertion said (pytest's ``E`` lines, the first two), or pytest's last line."""
    lines = [line[4:].strip() for line in result.stdout.splitlines() if line.startswith("E   ")]
    last = result.stdout.strip().splitlines()[-1:] or [""]
    return " ".join(lines[:2]) or last[0]
