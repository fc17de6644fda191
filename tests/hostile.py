"""What the audit of the harness's inputs plants (docs/security.md): a pickle that runs code when it is loaded."""

from __future__ import annotations

import pickle
from pathlib import Path


class WritesMarker:
    """Unpickling this runs ``Path(marker).touch()``: what a crafted pickle does with any code it likes."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return Path.touch, (self.marker,)


def marker_pickle(marker: Path) -> bytes:
    """A pickle whose loading writes ``marker``; a test asserts the marker never appears."""
    return pickle.dumps(WritesMarker(marker))
