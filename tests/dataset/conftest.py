"""A known crash of the selected target is reported as "crashed", not as a failed property.

A property whose target raised (:class:`parity.dataset_compare.TargetCrashed`) fails, with
Hypothesis's shrunk config, unless the crash is one the target declares in ``known_crashes`` (an
upstream bug, e.g. megatron-core 0.16.1's index helper): then the test is reported as xfailed with
the reason "crashed (known): the target raised ...". See docs/dataset.md, Crashes.
"""

from __future__ import annotations

import pytest

from parity.dataset_compare import TargetCrashed, is_known_crash


def _crashes(error: BaseException):
    if isinstance(error, TargetCrashed):
        yield error
    for inner in getattr(error, "exceptions", ()):  # several distinct failures: an ExceptionGroup
        yield from _crashes(inner)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    outcome = yield
    report = outcome.get_result()
    target = getattr(item.config, "parity_target", None)
    if call.when != "call" or call.excinfo is None or target is None:
        return
    crashes = list(_crashes(call.excinfo.value))
    if crashes and all(is_known_crash(crash, target.known_crashes) for crash in crashes):
        report.outcome = "skipped"
        # Hypothesis attaches the shrunk example to the exception it re-raises, as a note.
        notes = [
            note
            for note in getattr(call.excinfo.value, "__notes__", ())
            if note.startswith(("Falsifying", "Failing test case"))
        ]
        report.wasxfail = "crashed (known): " + "; ".join(str(crash) for crash in crashes) + "".join(
            " | " + " ".join(note.split()) for note in notes
        )
