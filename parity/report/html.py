"""The report as one self-contained HTML page: the tables, every failure in full, and plots.

Plots show the bug, not just that there is one (docs/report.md, The page): for each training
column the loss it logged against the oracle's per step, the error over the budget *of the oracle's
own trajectory* per tensor group and step (so a diverging run never looks healed), and the worst
gradient's out against golden with its fitted slope (0.5 is a loss halved); for each dataset column
that differs, only the keys that differ, the sample served first marked; one bar per distributed
case. The page opens on the verdict, linking every unexpected verdict, whose failures are open.
Images are inline PNGs (base64): the page fetches nothing. matplotlib is the ``[report]`` extra,
imported only here.
"""

from __future__ import annotations

import base64
import html
import io

from parity.report.model import Column, Options, ScenarioResult, entries, reading_order, table, verdict_line

#: Tensor groups of docs/budget.md, in the order they are drawn.
GROUPS = ("loss", "grad", "param")
#: A ratio of exactly zero (bit-identical) has no place on a log axis: it is drawn here.
ZERO_RATIO = 1e-4

#: The collapsed block that holds the scenarios only the built-in controls ran in, after all of yours.
CONTROLS_SUMMARY = "The controls' own scenarios ({n}): no target under test runs in them; every control as expected"
STYLE = """
ul.unexpected { color: #b00020; }
figcaption { font-size: 0.85em; max-width: 60em; }
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


def step_ratios(comparisons: list) -> dict[str, dict[int, float]]:
    """Per tensor group, step -> the worst error over the budget *of the oracle's own trajectory* at
    that step (``Comparison.own_budget``: what a correct target gets there; the verdict's budget
    also allows for the target's own trajectory, which a diverging bug inflates); and ``oracle``:
    the oracle's own error over the same budgets. What the budget panel draws."""
    ratios: dict[str, dict[int, float]] = {}
    for c in comparisons:
        if c.step is None:
            continue
        budget = c.own_budget
        ratio = c.error / budget if budget > 0 else (0.0 if c.error == 0 else float("inf"))
        reference = c.reference_error if c.own_reference_error is None else c.own_reference_error
        own = reference / budget if budget > 0 else 0.0
        if c.quantity in GROUPS:
            group = ratios.setdefault(c.quantity, {})
            group[c.step] = max(group.get(c.step, 0.0), ratio)
        ratios.setdefault("oracle", {})[c.step] = max(ratios.get("oracle", {}).get(c.step, 0.0), own)
    return {name: dict(sorted(by_step.items())) for name, by_step in ratios.items()}


def first_out_of_budget(comparisons: list):
    """The comparison of the earliest step that breaks its budget (the worst of that step), or None."""
    failing = [c for c in comparisons if c.step is not None and not c.holds]
    if not failing:
        return None
    first = min(c.step for c in failing)
    return max((c for c in failing if c.step == first), key=lambda c: c.ratio)


def worst_gradient(comparisons: list):
    """The gradient (else any tensor) furthest outside its budget, with its sampled values, or None."""
    sampled = [c for c in comparisons if len(c.sample) > 1]
    grads = [c for c in sampled if c.quantity == "grad"] or sampled
    return max(grads, key=lambda c: c.ratio, default=None)


def _loss_panel(axes, column: Column) -> None:
    """The loss the target logged per step against the oracle's (the golden) on the same draws."""
    losses = sorted((c for c in column.comparisons if c.quantity == "loss" and c.step is not None), key=lambda c: c.step)
    steps = [c.step for c in losses]
    axes.plot(steps, [c.golden_value for c in losses], color="black", marker="s", label="oracle (float64)")
    axes.plot(steps, [c.out_value for c in losses], color="tab:red" if not column.as_expected or not column.holds
              else "tab:blue", marker="o", linestyle="--", label=column.name)
    axes.set_xticks(steps)
    axes.set_xlabel("optimizer step")
    axes.set_ylabel("loss")
    axes.set_title("loss per step", fontsize=9)
    axes.legend(fontsize=7)


def _budget_panel(axes, column: Column) -> None:
    """Error over the oracle's-trajectory budget per tensor group and step, log scale, budget at 1."""
    ratios = step_ratios(column.comparisons)
    for group in GROUPS:
        if group in ratios:
            by_step = ratios[group]
            axes.plot(list(by_step), [max(r, ZERO_RATIO) for r in by_step.values()], marker="o", label=group)
    if "oracle" in ratios:
        axes.plot(list(ratios["oracle"]), [max(r, ZERO_RATIO) for r in ratios["oracle"].values()], color="grey",
                  linestyle=":", marker=".", label="oracle's own")
    axes.axhline(1.0, color="red", linestyle="--", label="budget")
    first = first_out_of_budget(column.comparisons)
    if first is not None:
        axes.axvline(first.step, color="red", alpha=0.3, linewidth=6, zorder=0)
        axes.annotate(f"first out: step {first.step}", (first.step, 1.0), xytext=(4, 6), textcoords="offset points",
                      color="red", fontsize=7)
    axes.set_xticks(sorted(ratios.get("oracle", {})))
    axes.set_yscale("log")
    axes.set_xlabel("optimizer step")
    axes.set_ylabel("max |out - golden| / budget")
    axes.set_title("error / budget of the oracle's trajectory", fontsize=9)
    axes.legend(fontsize=6)


def _scatter_panel(axes, comparison) -> None:
    """out against golden over the worst tensor's sampled values, the diagonal and the fitted slope."""
    golden, out = zip(*comparison.sample, strict=True)
    axes.scatter(golden, out, s=6, alpha=0.6, color="tab:red" if not comparison.holds else "tab:blue")
    low, high = min(golden), max(golden)
    axes.plot([low, high], [low, high], color="grey", linestyle=":", label="out = golden")
    if comparison.slope is not None:
        axes.plot([low, high], [comparison.slope * low, comparison.slope * high], color="black",
                  label=f"fit: out = {comparison.slope:.3f} x golden")
    axes.set_xlabel("golden (float64)")
    axes.set_ylabel("out")
    axes.set_title(_short(comparison.name), fontsize=8)
    axes.legend(fontsize=7)


def _short(name: str, width: int = 48) -> str:
    return name if len(name) <= width else "..." + name[-(width - 3):]


def run_plot(scenario: str, column: Column) -> str:
    """A training column in one figure: the loss per step against the oracle's (runs of several
    steps), error over budget per step, and the worst gradient's out-vs-golden scatter; a base64 PNG."""
    from matplotlib.figure import Figure

    steps = {c.step for c in column.comparisons if c.step is not None}
    worst = worst_gradient(column.comparisons)
    panels = [*([_loss_panel] if len(steps) > 1 else []), _budget_panel, *([_scatter_panel] if worst else [])]
    figure = Figure(figsize=(3.9 * len(panels), 3.3))
    figure.subplots_adjust(left=0.08, right=0.98, top=0.82, bottom=0.16, wspace=0.35)
    for number, panel in enumerate(panels):
        axes = figure.add_subplot(1, len(panels), number + 1)
        panel(axes, worst if panel is _scatter_panel else column)
    figure.suptitle(f"{scenario}: {column.name}: {column.verdict}", fontsize=10)
    return _png(figure)


def differences_plot(scenario: str, column: Column) -> str:
    """The keys whose served samples differ from the oracle's, samples x positions, the sample a
    resumed run served first marked; a base64 PNG."""
    from matplotlib.colors import ListedColormap
    from matplotlib.figure import Figure

    keys = differing_keys(column)
    figure = Figure(figsize=(max(5.5, 3.2 * len(keys)), 2.9))
    figure.subplots_adjust(left=0.1, right=0.97, top=0.78, bottom=0.17, wspace=0.35)
    for number, key in enumerate(keys):
        grid = column.differences[key].reshape(column.differences[key].shape[0], -1)
        axes = figure.add_subplot(1, len(keys), number + 1)
        axes.imshow(grid, cmap=ListedColormap(["#f2f2f2", "#d62728"]), vmin=0, vmax=1, aspect="auto",
                    interpolation="nearest")
        if column.served_first is not None and 0 <= column.served_first < grid.shape[0]:
            axes.axhline(column.served_first, color="black", linewidth=1.5, linestyle="--")
            axes.annotate("served first", (grid.shape[1] - 1, column.served_first), xytext=(0, -9),
                          textcoords="offset points", ha="right", fontsize=7)
        axes.set_title(f"{key}: {int(grid.sum())} positions differ", fontsize=8)
        axes.set_xlabel("position" if column.differences[key].ndim == 2 else "element (flattened)", fontsize=7)
        axes.set_ylabel("dataset[k]", fontsize=7)
        axes.tick_params(labelsize=6)
    figure.suptitle(f"{column.name}: positions differing from the oracle (red)", fontsize=9)
    return _png(figure)


def differing_keys(column: Column) -> list[str]:
    """The sample keys where some served sample differs from the oracle's: the only ones drawn."""
    return sorted(key for key, grid in column.differences.items() if grid.any())


def cases_plot(result: ScenarioResult) -> str:
    """The distributed cases: per case, each column's worst error over budget (log), the budget at 1."""
    from matplotlib.figure import Figure

    cases = list(dict.fromkeys(case for column in result.columns for case in column.figures))
    figure = Figure(figsize=(max(5.0, 1.6 * len(cases) * max(1, len(result.columns))), 3.2))
    figure.subplots_adjust(left=0.1, right=0.98, top=0.85, bottom=0.25)
    axes = figure.add_subplot()
    width = 0.8 / max(1, len(result.columns))
    for k, column in enumerate(result.columns):
        ratios = [max(column.worst_ratios.get(case, ZERO_RATIO), ZERO_RATIO) for case in cases]
        axes.bar([i + k * width for i in range(len(cases))], ratios, width, label=column.name)
    axes.axhline(1.0, color="red", linestyle="--", label="budget")
    axes.set_xticks([i + width * (len(result.columns) - 1) / 2 for i in range(len(cases))], cases, fontsize=7)
    axes.set_yscale("log")
    axes.set_ylabel("worst error / budget")
    axes.set_title(f"{result.name}: one bar per case and column", fontsize=9)
    axes.legend(fontsize=7)
    return _png(figure)


def _plots(result: ScenarioResult) -> list[tuple[str, str]]:
    """(caption, base64 PNG): a figure per training column, per dataset column that differs, and one
    for the distributed cases."""
    plots = []
    if result.name == "distributed" and any(c.worst_ratios for c in result.columns):
        plots.append(("worst error / budget of each two-rank case", cases_plot(result)))
    for column in result.columns:
        if column.comparisons:
            worst = worst_gradient(column.comparisons)
            fit = f"; {worst.name}: fitted out = {worst.slope:.3f} x golden" if worst and worst.slope is not None else ""
            plots.append((f"{column.name}: {column.diagnosis or column.verdict}{fit}", run_plot(result.name, column)))
        elif differing_keys(column):
            plots.append((f"{column.name}: {column.diagnosis or column.verdict}", differences_plot(result.name, column)))
    return plots


def _verdict_class(column: Column) -> str:
    if not column.as_expected:
        return "unexpected"
    return "ok" if column.holds or column.expect == "reference" else "caught"


def section_id(result: ScenarioResult, column: Column | None = None) -> str:
    """The anchor of a scenario, or of one column's failures in it: what the verdict links to."""
    return result.name if column is None else f"{result.name}--{column.name}".replace(":", "-")


def format_scenario(result: ScenarioResult) -> str:
    esc = html.escape
    if not result.columns:  # a scenario that did not run: its title says why
        return f'<h2 id="{esc(section_id(result))}">{esc(result.name)}: {esc(result.title)}</h2>'
    header, body = table(result)
    rows = ["<tr>" + "".join(f"<th>{esc(cell)}</th>" for cell in header) + "</tr>"]
    for row in body[:-1]:
        rows.append(f"<tr><th>{esc(row[0])}</th>" + "".join(f"<td>{esc(cell)}</td>" for cell in row[1:]) + "</tr>")
    verdicts = zip(result.columns, body[-1][1:], strict=True)
    rows.append(f"<tr><th>{esc(body[-1][0])}</th>"
                + "".join(f'<td class="{_verdict_class(c)}">{esc(cell)}</td>' for c, cell in verdicts) + "</tr>")
    parts = [
        f'<h2 id="{esc(section_id(result))}">{esc(result.name)}: {esc(result.title)}</h2>',
        f'<p class="budget">budget: {esc(result.budget)}</p>',
        "<table>", *rows, "</table>",
    ]
    parts += [
        f'<figure><img src="data:image/png;base64,{png}" alt="{esc(caption)}"><figcaption>{esc(caption)}</figcaption></figure>'
        for caption, png in _plots(result)
    ]
    anchored: set[str] = set()
    for e in entries(result):
        # An unexpected failure opens on arrival, and the first of its column is what the verdict links to.
        opened = " open" if e.is_failure and not e.column.as_expected else ""
        anchor = section_id(result, e.column)
        anchor_attr = ""
        if opened and anchor not in anchored:
            anchor_attr = f' id="{esc(anchor)}"'
            anchored.add(anchor)
        parts.append(f"<details{anchor_attr}{opened}><summary>[{e.number}] {esc(e.heading)}</summary><pre>{esc(e.text)}</pre>"
                     "</details>")
    return "\n".join(parts)


def format_html(results: list[ScenarioResult], options: Options) -> str:
    """The verdict first, a link and the diagnosis for every unexpected verdict, then each scenario."""
    from parity.report.model import unexpected

    ok = all(result.as_expected for result in results)
    yours, theirs = reading_order(results)
    esc = html.escape
    links = [
        f'<li><a href="#{esc(section_id(r, c) if c.failures else section_id(r))}">{esc(c.name)}, {esc(r.name)}</a>: '
        f"{esc(c.diagnosis or c.error or c.verdict)}</li>"
        for r, c in unexpected(results)
    ]
    return "\n".join([
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8"><title>parity report</title>',
        f"<style>{STYLE}</style></head><body>",
        f'<h1 class="{"ok" if ok else "unexpected"}">{esc(verdict_line(results))}</h1>',
        *(["<ul class=\"unexpected\">", *links, "</ul>"] if links else []),
        f"<p><code>python -m parity</code> on {esc(options.device)}, {esc(options.dtype)}, "
        f"seed {options.seed}. The targets under test come first; <code>[n]</code> marks a cell whose failure or notes "
        "are written out in full under the table.</p>",
        *([f"<pre>{esc(chr(10).join(options.oracle))}</pre>"] if options.oracle else []),
        *(format_scenario(result) for result in yours),
        *([f'<details class="controls"><summary>{esc(CONTROLS_SUMMARY.format(n=len(theirs)))}</summary>',
           *(format_scenario(result) for result in theirs), "</details>"] if theirs else []),
        "</body></html>",
        "",
    ])
