"""What a parity session adds to pytest so that no fault of a target hangs the run or goes unnamed
(docs/faults.md, The runner and Bounds).

* A per-test bound the user did not have to set: pytest-timeout's, ``parity.bounds.DEFAULT_TEST_BOUND_S``
  with its thread method (which ends on time even inside Hypothesis), unless ``--timeout``,
  ``$PYTEST_TIMEOUT`` or the ini's ``timeout`` says otherwise. The bound in force goes into
  ``$PARITY_TEST_BOUND_S``, so the harness's own bounds on target calls and DDP launches, held below it,
  end a hang in a failure naming the hung call before pytest-timeout ends the worker.
* ``--dist=loadgroup`` with a scheduler that survives a worker's death (``parity.xdist_scheduling``).
* The header says which bounds hold and where they come from.
* An interrupt (Ctrl-C, or SIGTERM, which would otherwise end the process past every cleanup) ends the run
  whole: ``parity.interrupts``.
"""

from __future__ import annotations

import os

import pytest

from parity.bounds import DEFAULT_TEST_BOUND_S, TEST_BOUND_ENV, call_bound
from parity.interrupts import INTERRUPTED_LINE, exit_status, raise_on_sigterm


def set_test_bound(config: pytest.Config) -> None:
    """Before pytest-timeout's own ``pytest_configure`` reads its settings (the plugin's runs first)."""
    if not config.pluginmanager.hasplugin("timeout"):
        config.parity_bound_source = "pytest-timeout is not installed: the harness's own bounds only"
        os.environ[TEST_BOUND_ENV] = str(DEFAULT_TEST_BOUND_S)
        return
    given = [
        ("--timeout", config.getvalue("timeout")),
        ("$PYTEST_TIMEOUT", os.environ.get("PYTEST_TIMEOUT")),
        ("the ini's timeout", config.getini("timeout")),
    ]
    source, seconds = next(((source, value) for source, value in given if value not in (None, "")), (None, None))
    if source is None:
        source, seconds = "set by the parity plugin; --timeout overrides", DEFAULT_TEST_BOUND_S
        config.option.timeout = seconds
        if config.getvalue("timeout_method") is None and not config.getini("timeout_method"):
            config.option.timeout_method = "thread"
    config.parity_bound_source = source
    os.environ[TEST_BOUND_ENV] = str(float(seconds))


class RunnerSafety:
    """Registered by the plugin in a parity session only. SIGTERM then unwinds the run as Ctrl-C does
    (``parity.interrupts``): every launch kills its ranks on the way out, and the run ends in one line
    and 130 (Ctrl-C) or 143 (SIGTERM)."""

    def __init__(self) -> None:
        self.interrupted: int | None = None
        raise_on_sigterm()

    def pytest_keyboard_interrupt(self, excinfo: pytest.ExceptionInfo) -> None:
        self.interrupted = exit_status(excinfo.value)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.interrupted is not None:
            session.exitstatus = self.interrupted
            reporter = session.config.pluginmanager.get_plugin("terminalreporter")
            if reporter is not None:
                reporter.write_line(INTERRUPTED_LINE)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_make_scheduler(self, config: pytest.Config, log):
        if config.getvalue("dist") != "loadgroup":
            return None
        from parity.xdist_scheduling import CrashSafeGroupScheduling

        return CrashSafeGroupScheduling(config, log)

    def pytest_report_header(self, config: pytest.Config) -> list[str]:
        test = float(os.environ[TEST_BOUND_ENV])
        if not test:
            return [f"parity bounds: none ({config.parity_bound_source} is 0)"]
        calls = call_bound(test)
        return [f"parity bounds: {test:g} s a test ({config.parity_bound_source}), {calls:g} s a target call or DDP launch"]
