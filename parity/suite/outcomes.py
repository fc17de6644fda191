"""What each property did to the session's target: held (examples run), failed (its kinds) or skipped (why).

A property's test counts the examples its check held on (:func:`count_example`, parity/suite/collect.py) onto the
item whose call is running (:func:`running`, entered by the plugin's ``pytest_runtest_call``); the plugin's
``pytest_runtest_makereport`` writes one row per property test onto the report's ``user_properties`` (:func:`record`),
which pytest-xdist serialises from a worker to the controller, where :class:`PropertyTable`
keeps it and prints the table (:func:`table`) for a session that names its target (docs/running.md, What a run
prints).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest

#: The name of the row among a report's ``user_properties``.
KEY = "parity-property"
#: The examples a property's check held on in this test item.
EXAMPLES = pytest.StashKey[int]()


#: The test item whose call runs in this process. Held here rather than handed to the test as pytest's ``request``:
#: a fuzzer that calls the test outside pytest's call phase (HypoFuzz) gives it the fixtures pytest defines, and
#: ``request`` is none of them, so a test asking for it could not run there at all.
_running: pytest.Item | None = None


@contextlib.contextmanager
def running(item: pytest.Item) -> Iterator[None]:
    global _running
    _running = item
    try:
        yield
    finally:
        _running = None


def count_example() -> None:
    """One more example held by the running item's check; nothing outside pytest's call (a fuzzer's run)."""
    if _running is not None:
        _running.stash[EXAMPLES] = _running.stash.get(EXAMPLES, 0) + 1


def _kinds(error: BaseException) -> list[str]:
    from parity.compare import ParityFailure
    from parity.safety.crash import TargetCrashed

    if isinstance(error, ParityFailure):
        return list(error.verdict.failure_kinds)
    if isinstance(error, TargetCrashed):
        return ["crash"]
    inner = getattr(error, "exceptions", None)  # several distinct failures: an ExceptionGroup
    if inner:
        return sorted({kind for each in inner for kind in _kinds(each)})
    return [type(error).__name__]


def _skip_reason(report: pytest.TestReport) -> str:
    if getattr(report, "wasxfail", ""):
        return report.wasxfail
    longrepr = report.longrepr
    reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
    return reason.removeprefix("Skipped: ")


def record(item: pytest.Item, call: pytest.CallInfo, report: pytest.TestReport) -> None:
    """One row on the report of a property's test: the phase that decided its outcome (a skip at setup, the
    call otherwise)."""
    prop = getattr(item.obj, "parity_property", None) if isinstance(item, pytest.Function) else None
    if prop is None or not (report.when == "call" or (report.when == "setup" and not report.passed)):
        return
    device = getattr(item, "callspec", None) and item.callspec.params.get("device")
    row = {"property": prop.name, "device": device or "", "outcome": report.outcome, "detail": ""}
    if report.skipped:
        row["detail"] = _skip_reason(report)
    elif report.passed:
        row["outcome"], row["detail"] = "held", f"{item.stash.get(EXAMPLES, 0)} examples"
    elif call.excinfo is not None:
        row["detail"] = ", ".join(_kinds(call.excinfo.value))
    report.user_properties = [*report.user_properties, (KEY, row)]  # the item's list is shared by every phase


class PropertyTable:
    """Registered by the plugin on the controller of a session that names its target: keeps each property's
    row as its report arrives (from a worker, through xdist) and prints the table at the end."""

    def __init__(self) -> None:
        self.rows: dict[str, dict] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        for name, row in report.user_properties:
            if name == KEY:
                self.rows[report.nodeid] = row

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_terminal_summary(self, terminalreporter, config: pytest.Config):
        """Around pytest's own summary, the table after it (its failures, then its short summary), so the run
        ends with the table, above the closing line."""
        result = yield
        target = getattr(config, "parity_target", None)
        if target is not None and self.rows:
            terminalreporter.section(f"parity target {target.name}: its properties", sep="-")
            for line in table(self.rows.values()):
                terminalreporter.write_line(line)
        return result


def table(rows) -> list[str]:
    """The properties, one row per property and device: held (examples run), failed (kinds), skipped (why)."""
    from parity.report.text_table import text_table

    rows = sorted(rows, key=lambda row: (row["property"], row["device"]))
    counts = {outcome: sum(row["outcome"] == outcome for row in rows) for outcome in ("held", "failed", "skipped")}
    body = text_table(("property", "device", "outcome", "examples, kinds or why"),
                      [(row["property"], row["device"], row["outcome"], row["detail"]) for row in rows])
    said = ", ".join(f"{count} {outcome}" for outcome, count in counts.items() if count)
    return [*body.splitlines(), f"{len(rows)} property tests: {said}"]
