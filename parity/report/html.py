"""The report as one self-contained HTML page: the tables, every failure in full, and plots.

Plots say at a glance what the tables say in numbers: for each training column, error over budget
per tensor group at every step (log scale, the budget at 1, the first step out of budget marked,
the oracle's own error over the same budget for scale); for each dataset column, which keys and
positions of the served samples differed from the oracle. Images are inline PNGs (base64): the
page fetches nothing. matplotlib is the ``[report]`` extra, imported only here.
"""

from __future__ import annotations

import base64
import html
import io

from parity.report.model import Column, Options, ScenarioResult, entries, table, verdict_line

#: Tensor groups of docs/budget.md, in the order they are drawn.
GROUPS = ("loss", "grad", "param")
#: A ratio of exactly zero (bit-identical) has no place on a log axis: it is drawn here.
ZERO_RATIO = 1e-4

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1em; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.5em; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
td.ok, h1.ok { color: #11691f; }
td.unexpected, h1.unexpected { color: #b00020; font-weight: bold; }
td.caught { color: #8a5a00; }
pre { background: #f7f7f7; padding: 0.5em; white-space: pre-wrap; }
figure { display: inline-block; margin: 0.5em; }
.budget { color: #555; font-style: italic; }
"""


def _png(figure) -> str:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def group_ratios(comparisons: list) -> dict[str, dict[int, float]]:
    """Per tensor group (and ``oracle``: the oracle's own error over the same budgets), step -> the
    worst error / budget of that step. What the budget plot draws."""
    stepped = [c for c in comparisons if c.step is not None]
    ratios: dict[str, dict[int, float]] = {}
    for c in stepped:
        if c.quantity in GROUPS:
            group = ratios.setdefault(c.quantity, {})
            group[c.step] = max(group.get(c.step, 0.0), c.ratio)
        own = c.reference_error / c.budget if c.budget > 0 else 0.0
        ratios.setdefault("oracle", {})[c.step] = max(ratios.get("oracle", {}).get(c.step, 0.0), own)
    return {name: dict(sorted(by_step.items())) for name, by_step in ratios.items()}


def first_out_of_budget(comparisons: list):
    """The comparison of the earliest step that breaks its budget (the worst of that step), or None."""
    failing = [c for c in comparisons if c.step is not None and not c.holds]
    if not failing:
        return None
    first = min(c.step for c in failing)
    return max((c for c in failing if c.step == first), key=lambda c: c.ratio)


def budget_plot(scenario: str, column: Column) -> str:
    """Error / budget per tensor group over the steps, the oracle's own beside it; a base64 PNG."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(7.6, 3.4))
    figure.subplots_adjust(left=0.1, right=0.7, top=0.9, bottom=0.15)  # fixed margins: the legend sits right
    axes = figure.add_subplot()
    ratios = group_ratios(column.comparisons)
    steps = sorted(ratios.get("oracle", {}))
    for group in GROUPS:
        if group in ratios:
            by_step = ratios[group]
            axes.plot(list(by_step), [max(r, ZERO_RATIO) for r in by_step.values()], marker="o",
                      label=f"{group} (worst tensor)")
    if steps:
        axes.plot(steps, [max(r, ZERO_RATIO) for r in ratios["oracle"].values()], color="grey", linestyle=":",
                  marker=".", label="oracle's own error / budget")
    after = [c for c in column.comparisons if c.step is None]  # evaluation losses, after the last step
    if after:
        x = (steps[-1] + 1) if steps else 0
        axes.plot([x] * len(after), [max(c.ratio, ZERO_RATIO) for c in after], "s", color="purple",
                  label="evaluation losses")
        axes.set_xticks([*steps, x], [*map(str, steps), "eval"])
    elif steps:
        axes.set_xticks(steps)
    axes.axhline(1.0, color="red", linestyle="--", label="budget")
    first = first_out_of_budget(column.comparisons)
    if first is not None:
        axes.axvline(first.step, color="red", alpha=0.3, linewidth=6, zorder=0)
        axes.annotate(f"first out of budget: step {first.step} ({first.quantity})", (first.step, 1.0),
                      xytext=(5, 8), textcoords="offset points", color="red", fontsize=8)
    axes.set_yscale("log")
    axes.set_xlabel("optimizer step")
    axes.set_ylabel("max |out - golden| / budget")
    axes.set_title(f"{scenario}: {column.name}: {column.verdict}", fontsize=10)
    axes.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return _png(figure)


def differences_plot(scenario: str, column: Column) -> str:
    """Per key, the samples x positions where the served sample differed from the oracle's; a base64 PNG."""
    from matplotlib.colors import ListedColormap
    from matplotlib.figure import Figure

    keys = sorted(column.differences)
    figure = Figure(figsize=(2.2 * len(keys), 2.8))
    figure.subplots_adjust(left=0.06, right=0.98, top=0.78, bottom=0.17, wspace=0.35)
    for number, key in enumerate(keys):
        grid = column.differences[key].reshape(column.differences[key].shape[0], -1)
        axes = figure.add_subplot(1, len(keys), number + 1)
        axes.imshow(grid, cmap=ListedColormap(["#f2f2f2", "#d62728"]), vmin=0, vmax=1, aspect="auto",
                    interpolation="nearest")
        axes.set_title(f"{key}: {int(grid.sum())} differ", fontsize=8)
        axes.set_xlabel("position" if column.differences[key].ndim == 2 else "element (flattened)", fontsize=7)
        if number == 0:
            axes.set_ylabel("dataset[k]", fontsize=7)
        axes.tick_params(labelsize=6)
    figure.suptitle(f"{scenario}: {column.name}: positions differing from the oracle (red)", fontsize=9)
    return _png(figure)


def _plots(result: ScenarioResult) -> list[tuple[str, str]]:
    """(caption, base64 PNG) for every column with per-step comparisons or a dataset comparison."""
    plots = []
    for column in result.columns:
        if column.comparisons:
            plots.append((f"{column.name}: error / budget per tensor group and step", budget_plot(result.name, column)))
        elif column.differences:
            plots.append((f"{column.name}: where served samples differ from the oracle",
                          differences_plot(result.name, column)))
    return plots


def _verdict_class(column: Column) -> str:
    if not column.as_expected:
        return "unexpected"
    return "ok" if column.holds or column.expect == "reference" else "caught"


def format_scenario(result: ScenarioResult) -> str:
    esc = html.escape
    if not result.columns:  # a scenario that did not run: its title says why
        return f'<h2 id="{esc(result.name)}">{esc(result.name)}: {esc(result.title)}</h2>'
    header, body = table(result)
    rows = ["<tr>" + "".join(f"<th>{esc(cell)}</th>" for cell in header) + "</tr>"]
    for row in body[:-1]:
        rows.append(f"<tr><th>{esc(row[0])}</th>" + "".join(f"<td>{esc(cell)}</td>" for cell in row[1:]) + "</tr>")
    verdicts = zip(result.columns, body[-1][1:], strict=True)
    rows.append(f"<tr><th>{esc(body[-1][0])}</th>"
                + "".join(f'<td class="{_verdict_class(c)}">{esc(cell)}</td>' for c, cell in verdicts) + "</tr>")
    parts = [
        f'<h2 id="{esc(result.name)}">{esc(result.name)}: {esc(result.title)}</h2>',
        f'<p class="budget">budget: {esc(result.budget)}</p>',
        "<table>", *rows, "</table>",
    ]
    parts += [
        f'<figure><img src="data:image/png;base64,{png}" alt="{esc(caption)}"><figcaption>{esc(caption)}</figcaption></figure>'
        for caption, png in _plots(result)
    ]
    parts += [
        f"<details><summary>[{e.number}] {esc(e.heading)}</summary><pre>{esc(e.text)}</pre></details>"
        for e in entries(result)
    ]
    return "\n".join(parts)


def format_html(results: list[ScenarioResult], options: Options) -> str:
    ok = all(result.as_expected for result in results)
    verdict = html.escape(verdict_line(results))
    return "\n".join([
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8"><title>parity report</title>',
        f"<style>{STYLE}</style></head><body>",
        f'<h1 class="{"ok" if ok else "unexpected"}">{verdict}</h1>',
        f"<p><code>python -m parity</code> on {html.escape(options.device)}, {html.escape(options.dtype)}, "
        f"seed {options.seed}. <code>[n]</code> marks a cell whose failure or note is written out in full under "
        "the table.</p>",
        *([f"<pre>{html.escape(chr(10).join(options.oracle))}</pre>"] if options.oracle else []),
        *(format_scenario(result) for result in results),
        "</body></html>",
        "",
    ])
