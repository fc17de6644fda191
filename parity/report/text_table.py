"""Plain-text tables for the console: left-aligned columns, a rule under the header.

A table wider than the terminal is unreadable once it wraps, so ``text_table`` can be held to a
width: long cells wrap onto further lines of their row, and columns that still do not fit go to
further blocks, each repeating the first (label) column.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

GAP = "  "


def text_table(
    header: Sequence[str], rows: Sequence[Sequence[object]], width: int | None = None, cell_width: int = 40
) -> str:
    """The table; with ``width``, no line is longer: cells wrap at ``cell_width`` (the label column
    at the same), and the columns after the first are packed into blocks of at most ``width``."""
    cells = [list(map(str, header)), *[[str(cell) for cell in row] for row in rows]]
    if width is None:
        return _render(cells, [max(len(row[c]) for row in cells) for c in range(len(header))])
    cell_width = min(cell_width, (width - len(GAP)) // 2)
    wrapped = [[_wrap(cell, cell_width) for cell in row] for row in cells]
    widths = [max(len(line) for row in wrapped for line in row[c]) for c in range(len(header))]
    blocks, current = [], []
    for column in range(1, len(header)):
        if current and sum(widths[c] + len(GAP) for c in [0, *current, column]) - len(GAP) > width:
            blocks.append(current)
            current = []
        current.append(column)
    blocks.append(current)
    return "\n\n".join(
        _render_wrapped([[row[c] for c in [0, *block]] for row in wrapped], [widths[c] for c in [0, *block]])
        for block in blocks
    )


def _wrap(cell: str, width: int) -> list[str]:
    if len(cell) <= width:
        return [cell]
    return textwrap.wrap(cell, width, break_on_hyphens=False)


def _render(cells: list[list[str]], widths: list[int]) -> str:
    return _render_wrapped([[[cell] for cell in row] for row in cells], widths)


def _render_wrapped(cells: list[list[list[str]]], widths: list[int]) -> str:
    def render(row: list[list[str]]) -> list[str]:
        height = max(len(cell) for cell in row)
        return [
            GAP.join((cell[k] if k < len(cell) else "").ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
            for k in range(height)
        ]

    rule = GAP.join("-" * w for w in widths)
    return "\n".join([*render(cells[0]), rule, *(line for row in cells[1:] for line in render(row))])


def indented(text: str, indent: str, width: int) -> str:
    """``text`` with every line indented and wrapped at ``width`` (continuations indented two more),
    keeping each line's own leading spaces: a long message stays whole, only folded."""
    lines = []
    for line in str(text).splitlines() or [""]:
        lead = indent + line[: len(line) - len(line.lstrip())]
        lines += textwrap.wrap(
            line.strip(), width, initial_indent=lead, subsequent_indent=lead + "  ",
            break_on_hyphens=False, drop_whitespace=True,
        ) or [""]
    return "\n".join(lines)
