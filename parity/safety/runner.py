"""What a parity session adds to pytest so that no fault of a target hangs the run or goes unnamed
(docs/faults.md, The runner and Bounds).

* A per-test bound the user did not have to set: pytest-timeout's, ``parity.safety.bounds.DEFAULT_TEST_BOUND_S``
  with its thread method (which ends on time even inside Hypothesis), unless ``--timeout``,
  ``$PYTEST_TIMEOUT`` or the ini's ``timeout`` says otherwise. The bound in force goes into
  ``$PARITY_TEST_BOUND_S``, so the harness's own bounds on target calls and DDP launches, held below it,
  end a hang in a failure naming the hung call before pytest-timeout ends the worker.
* ``--dist=loadgroup`` with a scheduler that survives a worker's death (``parity.safety.xdist_scheduling``).
* The header says which bounds hold and where they come from.
* An interrupt (Ctrl-C, or SIGTERM, which would otherwise end the process past every cleanup) ends the run
  whole: ``parity.safety.interrupts``.
* A test whose target ends its xdist worker's process (``os._exit``, a segfault) fails as xdist says,
  "worker 'gw0' crashed while running ...", and then how the worker ended and the last target call it
  started: each worker keeps that call in a file of its own (``parity.safety.bounds.CallSlot``) that the
  controller reads when xdist reports the crash.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from parity.safety import bounds
from parity.safety.bounds import DEFAULT_TEST_BOUND_S, TEST_BOUND_ENV, CallSlot, described
from parity.safety.crash import process_ended
from parity.safety.interrupts import INTERRUPTED_LINE, exit_status, watch_signals


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
    # Whoever set the bound: pytest-timeout's signal method, its default on POSIX, fails the test with
    # pytest's ``Failed``, which Hypothesis takes for one more failing example and shrinks on; the thread
    # method ends the worker, after the harness's own bounds below it have named the hung call.
    if config.getvalue("timeout_method") is None and not config.getini("timeout_method"):
        config.option.timeout_method = "thread"
    config.parity_bound_source = source
    os.environ[TEST_BOUND_ENV] = str(float(seconds))


#: The folder where each xdist worker keeps the last target call it started (``<worker id>``).
CALL_SLOTS_ENV = "PARITY_CALL_SLOTS"


class RunnerSafety:
    """Registered by the plugin in a parity session only. SIGTERM then unwinds the run as Ctrl-C does
    (``parity.safety.interrupts``): every launch kills its ranks on the way out, and the run ends in one line
    and 130 (Ctrl-C) or 143 (SIGTERM). A stop no signal caused (xdist's ``-x``) keeps pytest's own status."""

    def __init__(self, config: pytest.Config) -> None:
        self.interrupted: int | None = None
        self.slot: CallSlot | None = None
        self.slots: str | None = None  # the folder this session made (the controller's)
        watch_signals()
        workerinput = getattr(config, "workerinput", None)
        if workerinput is not None and os.environ.get(CALL_SLOTS_ENV):
            self.slot = CallSlot(Path(os.environ[CALL_SLOTS_ENV]) / workerinput["workerid"])
            bounds.on_call = self.slot.remember
        elif workerinput is None and config.getoption("numprocesses", default=None):
            self.slots = os.environ[CALL_SLOTS_ENV] = tempfile.mkdtemp(prefix="parity-calls-")  # the workers inherit it

    def pytest_runtest_logstart(self) -> None:
        if self.slot is not None:
            self.slot.remember("")  # a call of an earlier test is not this one's

    @pytest.hookimpl(optionalhook=True)
    def pytest_handlecrashitem(self, crashitem: str, report: pytest.TestReport, sched) -> None:
        worker = getattr(report, "node", None)
        folder = os.environ.get(CALL_SLOTS_ENV)
        if worker is None or folder is None:
            return
        popen = getattr(getattr(worker.gateway, "_io", None), "popen", None)  # execnet's worker process
        try:
            returncode = popen.wait(timeout=5) if popen is not None else None
        except Exception:  # noqa: BLE001 - still running or not ours to wait for: said without it
            returncode = None
        how = f": the worker {process_ended(returncode)}" if returncode is not None else ""
        last = CallSlot.read(Path(folder) / worker.gateway.id)
        report.longrepr = f"{report.longrepr}{how}" + (f"; the last target call it started: {last}" if last else "")

    def pytest_keyboard_interrupt(self, excinfo: pytest.ExceptionInfo) -> None:
        self.interrupted = exit_status(excinfo.value)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.slots is not None:
            shutil.rmtree(self.slots, ignore_errors=True)
        if self.interrupted is not None:
            session.exitstatus = self.interrupted
            reporter = session.config.pluginmanager.get_plugin("terminalreporter")
            if reporter is not None:
                reporter.write_line(INTERRUPTED_LINE)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_make_scheduler(self, config: pytest.Config, log):
        if config.getvalue("dist") != "loadgroup":
            return None
        from parity.safety.xdist_scheduling import CrashSafeGroupScheduling

        return CrashSafeGroupScheduling(config, log)

    def pytest_report_header(self, config: pytest.Config) -> list[str]:
        return [f"parity bounds: {described('a test', config.parity_bound_source)}"]
