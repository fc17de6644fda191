"""The report as people read it: a terminal within 120 columns at any number of targets, every
failure in full under its table, the same verdict as Markdown tables and as an HTML page whose
plots are real PNGs.

Every rendering is built from one report computed once for the module (every scenario but the
two-rank one, which runs processes; its column is built from recorded ``ddp_cases`` verdicts).
"""

from __future__ import annotations

import base64
import html
import io
import re
from dataclasses import replace
from html.parser import HTMLParser

import pytest

from parity.report.model import Options, ScenarioResult, entries, table, verdict_line
from parity.report.scenarios import distributed_column, run_report
from parity.report.text import WIDTH, collapse_repeats, format_report
from parity.table.scenario import causal_scenario, properties_scenario
from parity.targets import default_targets, get_target

pytestmark = pytest.mark.xdist_group("report-render")

#: Two ``parity.training.diffusion.drivers.ranks`` verdicts as that module writes them (the fields the report reads).
RECORDED_DDP = {
    "unequal-counts": {"holds": True, "kinds": [], "notes": [], "worst": "step 0 loss: error/budget 0.31",
                       "worst_ratio": 0.31},
    "rank-local": {"holds": False, "kinds": ["normalisation"], "notes": [], "worst_ratio": 5.2e5,
                   "worst": "[normalisation] rank 1 step 0 loss: max|out - golden| = 1.2e+00 at index [] (out 2.4, "
                            "golden 1.2) exceeds the budget 2.3e-06 = 2 x reference error 4.1e-07 + floor"},
}


@pytest.fixture(scope="module")
def results() -> list[ScenarioResult]:
    """Every scenario on the built-in targets; the properties (causal-LM ones for the causal known bug) on the known
    bugs only (impl's cells are all "holds", and running the whole table on it is the suite's job, not this module's)."""
    bugs = [t for t in default_targets().values() if t.is_known_bug]
    options, quiet = Options(examples=1), lambda message: None
    computed = run_report([*bugs, get_target("impl")], options, ["dataset-cache", "diffusion-window", "training-run"], quiet)
    distributed = ScenarioResult("distributed", "two ranks (recorded)", "per tensor on every rank")
    distributed.columns = [distributed_column(get_target("known-bug:local-mean"), RECORDED_DDP)]
    properties = properties_scenario([bug for bug in bugs if bug.causal_trainer is None], options, quiet)
    causal = causal_scenario([bug for bug in bugs if bug.causal_trainer is not None], options, quiet)
    for column in [*properties.columns, *causal.columns, *distributed.columns]:  # controls, as run_report marks them
        column.control = True
    return [*computed, properties, causal, distributed]


def widened(results: list[ScenarioResult], copies: int) -> list[ScenarioResult]:
    """The same report with ``copies`` more columns per target, under long names: installed targets."""
    return [
        replace(r, columns=[*r.columns, *(replace(c, name=f"installed-{k}:{c.name}")
                                          for k in range(copies) for c in r.columns)])
        for r in results
    ]


def words(text: str) -> str:
    return " ".join(text.split())


def test_every_scenario_is_computed(results):
    assert [r.name for r in results] == ["dataset-cache", "diffusion-window", "training-run", "properties", "causal-lm",
                                         "distributed"]
    assert all(r.as_expected for r in results)


@pytest.mark.parametrize("copies", [0, 1, 4])
@pytest.mark.parametrize("quiet", [False, True])
def test_no_line_is_wider_than_the_terminal(results, copies, quiet):
    text = format_report(widened(results, copies), quiet=quiet)
    assert max(len(line) for line in text.splitlines()) <= WIDTH
    if not quiet:  # every column of every scenario is in some block
        for result in widened(results, copies):
            for column in result.columns:
                assert words(column.name) in words(text)


def test_the_verdict_comes_first_and_every_failure_is_in_full_under_its_table(results):
    """With ``controls``, every column in full: each failure's whole text (repeated lines collapsed)
    under its table; notes counted in their heading, their text left to the files."""
    text = format_report(results, controls=True)
    assert text.splitlines()[0] == verdict_line(results)
    for result in results:
        scenario = text.split(f"== {result.name}:")[1].split("\n== ")[0]
        listed = entries(result)
        assert any(e.is_failure for e in listed), result.name  # each scenario has a known bug's failure
        for entry in listed:
            assert f"[{entry.number}] {entry.heading}" in scenario
            shown = collapse_repeats(entry.text) if entry.is_failure else entry.heading
            assert words(shown) in words(scenario), entry.heading
    assert "(the same for 2, 4, 5, 6, 7, 8, 9, 10)" in text  # dataset[1] .. dataset[10] alike: one line


def test_a_passing_report_shows_impl_and_a_line_per_control(results):
    controls = {c.name for r in results for c in r.columns if c.control}
    assert controls == {t.name for t in default_targets().values() if t.is_known_bug}
    text = format_report(results)
    # and impl's column of the properties scenario, a row per property; the causal-lm scenario's title and control
    assert len(text.splitlines()) <= 130 - 16
    for result in results:
        scenario = text.split(f"== {result.name}:")[1].split("\n== ")[0]
        for column in (c for c in result.columns if c.control):
            assert f"control {column.name}: caught as expected" in scenario
            assert f"{column.name}: failure" not in scenario


def with_a_broken_target(results: list[ScenarioResult]) -> list[ScenarioResult]:
    """The report as a user sees it whose own trainer and loss are the local-mean bug: their column
    first, expected to pass; every built-in column a control."""
    broken = []
    for result in results:
        bug = next((c for c in result.columns if c.name == "known-bug:local-mean"), None)
        columns = [replace(c, control=c.expect != "reference") for c in result.columns]
        mine = [replace(bug, name="my-broken", expect="pass", control=False)] if bug else []
        broken.append(replace(result, columns=[*mine, *columns]))
    return broken


def test_a_broken_target_of_yours_leads_with_what_is_wrong(results):
    lines = format_report(with_a_broken_target(results)).splitlines()
    assert lines[0] == "parity: UNEXPECTED verdicts in my-broken (diffusion-window, training-run, properties, distributed)"
    first_screen = " ".join(" ".join(lines[:40]).split())
    # A trainer's wrong count is named by the objective it computes (docs/trainer.md, Naming the objective).
    assert "my-broken, training-run: this trainer computes mean_g(S_g / N_g), the local mean" in first_screen
    assert "my-broken, diffusion-window: out = 0.995 to 1.257 x golden over every loss and gradient of step 0: not one" \
        in first_screen
    text = "\n".join(lines)
    training = text.split("== training-run:")[1].split("\n== ")[0]
    assert "kinds                               normalisation\n" in training  # the notes' precision is not a kind shown
    assert "[1] my-broken: failure (UNEXPECTED)\n    normalisation: this trainer computes mean_g(S_g / N_g)" in training
    assert "my-broken: 20 notes" in training and "[precision] step 0 param" not in training.split("20 notes")[1]


def test_the_controls_own_scenarios_follow_all_of_yours_collapsed(results):
    """A trainer of yours runs in no dataset scenario: the controls' dataset-cache comes after every scenario
    of yours, in a line per control, in the text and on the page (in a closed block there)."""
    from parity.report.html import CONTROLS_SUMMARY, format_html
    from parity.report.text import CONTROLS_HEADING

    broken = with_a_broken_target(results)
    text = format_report(broken)
    order = [text.index(f"== {name}:") for name in ("diffusion-window", "training-run", "properties", "distributed")]
    assert order == sorted(order) and max(order) < text.index(CONTROLS_HEADING) < text.index("== dataset-cache:")
    cache = text.split("== dataset-cache:")[1].split("\n== ")[0]
    assert "control known-bug:cache-alias: caught as expected" in cache and "step 0" not in cache
    page = format_html(broken, Options(under_test=("my-broken",)))
    collapsed = page.index('<details class="controls"><summary>' + html.escape(CONTROLS_SUMMARY.format(n=2)))
    assert page.index('<h2 id="distributed">') < collapsed < page.index('<h2 id="dataset-cache">')
    assert format_report(results).index("== dataset-cache:") < format_report(results).index("== training-run:")  # impl's own


def test_a_failing_cell_stays_short_and_points_to_its_failure(results):
    properties = next(r for r in results if r.name == "properties")
    header, body = table(properties)
    failing = [cell for row in body[:-1] for cell in row[1:] if cell.startswith("FAILS")]
    assert failing and all(len(cell) <= 70 and re.search(r"\[\d+\]$", cell) for cell in failing)


def test_quiet_prints_the_verdict_and_only_the_unexpected_failures(results):
    assert format_report(results, quiet=True) == verdict_line(results)
    # the recorded two-rank column is a known bug: present it as impl, expected to pass
    broken = replace(results[-1], columns=[replace(results[-1].columns[0], name="impl", expect="pass")])
    text = format_report([*results[:-1], broken], quiet=True)
    assert text.splitlines()[0] == "parity: UNEXPECTED verdicts in impl (distributed)"
    assert "rank-local: failure (UNEXPECTED)" in text and words(RECORDED_DDP["rank-local"]["worst"]) in words(text)
    assert "caught" not in text


def markdown_tables(markdown: str) -> list[list[list[str]]]:
    """Every GFM table: its rows, each a list of cells (escaped pipes restored)."""
    tables, current = [], []
    for line in [*markdown.splitlines(), ""]:
        if line.startswith("|"):
            current.append([cell.strip().replace("\\|", "|") for cell in re.split(r"(?<!\\)\|", line)[1:-1]])
        elif current:
            tables.append(current)
            current = []
    return tables


def test_the_markdown_holds_one_table_per_scenario_and_each_failure_in_a_details_block(results):
    import html

    from parity.report.markdown import format_markdown

    markdown = format_markdown(results, Options())
    assert markdown.startswith(f"## ✅ {verdict_line(results)}\n")
    tables = markdown_tables(markdown)
    assert len(tables) == len(results)
    for result, parsed in zip(results, tables, strict=True):
        header, body = table(result)
        assert parsed[0] == header and set("".join(parsed[1])) <= set(":-")
        assert [[html.unescape(cell) for cell in row] for row in parsed[2:]] == [[words(c) for c in row] for row in body]
    blocks = re.findall(r"<details><summary>(.*?)</summary>\n\n```text\n(.*?)\n```\n\n</details>", markdown, re.S)
    listed = [entry for result in results for entry in entries(result)]
    assert [(html.unescape(summary), text) for summary, text in blocks] == [
        (f"[{e.number}] {e.heading}", e.text) for e in listed
    ]


class Page(HTMLParser):
    """What a browser would need: tables (cell texts), images (their sources), <pre> texts, links."""

    def __init__(self):
        super().__init__()
        self.tables, self.images, self.pre, self.fetched = [], [], [], []
        self._cell = self._in_pre = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell = ""
        elif tag == "img":
            self.images.append(attrs["src"])
        elif tag == "pre":
            self._in_pre = ""
        if tag in ("script", "link", "iframe") or any(k in ("href", "src") and not v.startswith(("data:", "#"))
                                                      for k, v in attrs.items()):
            self.fetched.append((tag, attrs))

    def handle_endtag(self, tag):
        if tag in ("td", "th"):
            self.tables[-1][-1].append(self._cell)
            self._cell = None
        elif tag == "pre":
            self.pre.append(self._in_pre)
            self._in_pre = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell += data
        if self._in_pre is not None:
            self._in_pre += data


def test_the_html_page_is_self_contained_with_its_tables_failures_and_plots(results):
    pytest.importorskip("matplotlib")
    from PIL import Image

    from parity.report.html import format_html

    page = Page()
    page.feed(format_html(results, Options()))
    assert page.fetched == []
    assert page.tables == [[row for row in [table(r)[0], *table(r)[1]]] for r in results]
    assert page.pre == [entry.text for result in results for entry in entries(result)]
    # a figure per training column, per dataset column that differs, and one for the two-rank cases
    plotted = [c for r in results for c in r.columns if c.comparisons or any(g.any() for g in c.differences.values())]
    assert len(page.images) == len(plotted) + 1 == 8  # 2 dataset, 2 window, 3 training columns; distributed
    for source in page.images:
        data = base64.b64decode(source.removeprefix("data:image/png;base64,"), validate=True)
        assert data.startswith(b"\x89PNG\r\n\x1a\n")
        with Image.open(io.BytesIO(data)) as image:
            image.verify()
            assert image.width >= 400 and image.height >= 200


def test_the_page_opens_on_the_verdict_and_links_every_unexpected_failure_open(results):
    from parity.report.html import format_html

    page = format_html(with_a_broken_target(results), Options(under_test=("my-broken",)))
    body = page.split("<body>", 1)[1]
    assert body.startswith('\n<h1 class="unexpected">parity: UNEXPECTED verdicts in my-broken (')
    links = re.findall(r'<li><a href="#([^"]+)">my-broken, ([^<]+)</a>: ([^<]+)</li>', body)
    assert [(anchor, scenario) for anchor, scenario, _ in links] == [
        ("diffusion-window--my-broken", "diffusion-window"), ("training-run--my-broken", "training-run"),
        ("properties--my-broken", "properties"), ("distributed--my-broken", "distributed"),
    ]
    assert links[1][2].startswith("this trainer computes mean_g(S_g / N_g), the local mean")
    for anchor, _, _ in links:
        assert f'<details id="{anchor}" open><summary>' in body
    assert "<details><summary>" in body and body.count(" open><summary>") == 4  # the controls' stay closed


def test_the_budget_plot_keeps_a_diverging_bug_above_the_line(results):
    """Plotted against the budget of the oracle's own trajectory, the local-mean bug stays out of
    budget on every step (against its own diverging trajectory's budget it would look healed)."""
    from parity.report.html import first_out_of_budget, step_ratios

    training = {c.name: c for c in next(r for r in results if r.name == "training-run").columns}
    bug, impl = training["known-bug:local-mean"], training["impl"]
    ratios = step_ratios(bug.comparisons)
    assert set(ratios) == {"loss", "grad", "param", "oracle"} and list(ratios["grad"]) == [0, 1, 2]
    assert all(r > 1e3 for group in ("loss", "grad", "param") for r in ratios[group].values())
    first = first_out_of_budget(bug.comparisons)
    assert first.step == 0 and ratios[first.quantity][0] >= first.ratio > 1
    # the oracle's own error is at most half the budget (2 x its error + a floor): the scale of rounding
    assert all(0 < r <= 0.5 for r in ratios["oracle"].values())
    assert first_out_of_budget(impl.comparisons) is None
    assert all(r <= 1 for name, by_step in step_ratios(impl.comparisons).items() for r in by_step.values())


def test_the_scatter_shows_the_factor(results):
    from parity.report.html import worst_gradient

    training = {c.name: c for c in next(r for r in results if r.name == "training-run").columns}
    worst = worst_gradient(training["known-bug:local-mean"].comparisons)
    assert worst.quantity == "grad" and 1 < len(worst.sample) <= 256 and abs(worst.slope - 0.5) < 1e-3
    assert abs(worst_gradient(training["impl"].comparisons).slope - 1) < 1e-4


def test_the_dataset_plot_data_is_where_samples_differ(results):
    dataset = {c.name: c for c in next(r for r in results if r.name == "dataset-cache").columns}
    bug, impl = dataset["known-bug:cache-alias"], dataset["impl"]
    assert int(bug.differences["loss_mask"].sum()) == bug.figures["loss-mask positions wrong"] > 0
    assert bug.differences["loss_mask"].shape[0] == bug.figures["samples"]
    assert not any(grid.any() for grid in impl.differences.values())


def test_the_window_scenario_holds_for_impl_and_catches_the_bug_in_the_json(results):
    import json

    from parity.report.model import as_json

    report = json.loads(as_json(results, Options()))
    scenario = next(s for s in report["scenarios"] if s["name"] == "diffusion-window")
    assert report["as_expected"] and scenario["verdicts"] == {
        "known-bug:local-mean": "outside budget (caught)",
        "impl": "within budget (ok)",
    }
    columns = {column["name"]: column for column in scenario["columns"]}
    bug, impl = columns["known-bug:local-mean"], columns["impl"]
    assert impl["figures"]["mask counts"] == [7, 10] and impl["failures"] == {}
    assert bug["failures"]["verdict"].startswith("normalisation: out = 0.995 to 1.257 x golden over every loss and ")
    assert bug["diagnosis"] in bug["failures"]["verdict"] and "\n[normalisation] step 0 grad " in bug["failures"]["verdict"]
    # the oracle's rows are on impl's own draws: impl sits at the oracle's own float32 error
    assert impl["figures"]["max |grad - golden|"] <= impl["figures"]["grad budget (largest)"]
    assert impl["figures"]["oracle: max |grad - golden|"] > 0
    assert "comparisons" not in impl and "differences" not in impl  # the plots' data stays out of the JSON


def not_a_dataset(documents, config):
    raise TypeError("not a dataset")


def test_a_target_that_crashes_in_a_property_does_not_hold_unless_the_crash_is_known():
    from parity.targets import Target

    crashing = Target(name="crashes", description="raises", expect="pass", dataset=f"{__name__}:not_a_dataset")
    (column,) = properties_scenario([crashing], Options(examples=1), lambda message: None).columns
    assert column.verdict == "outside budget (UNEXPECTED)"
    assert column.figures["dataset/matches-oracle"].startswith("crashed at corner 1 of 53: the target raised TypeError")
    assert "not a dataset" in column.failures["dataset/matches-oracle"]
    known = replace(crashing, known_crashes=("TypeError at tests/report/test_report_render.py",))
    (column,) = properties_scenario([known], Options(examples=1), lambda message: None).columns
    assert column.verdict == "within budget (ok)" and not column.failures
    assert column.figures["dataset/matches-oracle"].startswith("crashed (known) at corner 1 of 53: the target raised TypeError")


def test_a_table_keeps_to_its_width_whatever_its_cells():
    from parity.report.text_table import text_table

    header = ["", *(f"target-{'x' * 50}-{k}" for k in range(7))]  # names with no place to break
    rows = [["a row name longer than any cell may be, by far", *[f"{k} " + "word " * 30 for k in range(7)]]]
    text = text_table(header, rows, width=WIDTH)
    assert max(len(line) for line in text.splitlines()) <= WIDTH
    blocks = text.split("\n\n")
    assert len(blocks) > 1 and all(block.splitlines()[0].startswith(" ") for block in blocks)  # label column first
    assert words("".join(text.split())).count("word") == 7 * 30  # every cell whole, only folded
