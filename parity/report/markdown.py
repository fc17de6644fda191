"""The report as GitHub-flavoured Markdown, for ``$GITHUB_STEP_SUMMARY``: the verdict first, a table
per scenario, and each failure or note in full in a collapsed ``<details>`` block under it."""

from __future__ import annotations

import html

from parity.report.model import Options, ScenarioResult, entries, table, verdict_line


def _cell(text: str) -> str:
    """A table cell: one line, pipes escaped, HTML specials as entities."""
    return html.escape(" ".join(str(text).split()), quote=False).replace("|", "\\|")


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(map(_cell, cells)) + " |"


def format_scenario(result: ScenarioResult) -> str:
    if not result.columns:  # a scenario that did not run: its title says why
        return f"### {result.name}: {_cell(result.title)}"
    header, body = table(result)
    parts = [
        f"### {result.name}: {_cell(result.title)}",
        "",
        f"*budget: {_cell(result.budget)}*",
        "",
        _row(header),
        "|" + "|".join([":--", *["--"] * (len(header) - 1)]) + "|",
        *(_row(row) for row in body),
    ]
    for entry in entries(result):
        # A fenced block inside <details> keeps the message verbatim; blank lines around it let GitHub render it.
        parts += [
            "",
            f"<details><summary>[{entry.number}] {html.escape(entry.heading)}</summary>",
            "",
            "```text",
            entry.text.replace("```", "'''"),
            "```",
            "",
            "</details>",
        ]
    return "\n".join(parts)


def format_markdown(results: list[ScenarioResult], options: Options) -> str:
    ok = all(result.as_expected for result in results)
    lines = [
        f"## {'✅' if ok else '❌'} {html.escape(verdict_line(results), quote=False)}",
        "",
        f"`python -m parity` on {options.device}, {options.dtype}, seed {options.seed}; "
        "`[n]` marks a cell whose failure or note is written out in full under the table.",
    ]
    if options.oracle:
        lines += ["", "```text", *options.oracle, "```"]
    return "\n\n".join(["\n".join(lines), *(format_scenario(result) for result in results)]) + "\n"
