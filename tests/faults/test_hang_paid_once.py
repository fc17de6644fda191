"""A hang is paid once per target interface and process (parity.safety.bounds, docs/faults.md, Bounds).

The first call of a target's interface that outlives its bound ends its test naming the call and its stack;
every later call of that interface in the same process (one xdist worker) fails at once, naming the
earlier hang, instead of waiting out a bound of its own.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from xml.etree import ElementTree

import pytest

from parity.safety import bounds
from parity.safety.bounds import CallTimedOut, HungBefore, bounded, hang_scope
from tests.installed import install_adapter

REPOSITORY = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def no_earlier_hang(monkeypatch):
    monkeypatch.setattr(bounds, "_HUNG", {})


def _hang(what: str, scope: str, seconds: float = 0.2) -> None:
    with hang_scope(scope), bounded(what, seconds):
        time.sleep(30)


def test_after_one_hang_the_same_interface_fails_at_once_naming_it():
    with pytest.raises(CallTimedOut) as first:
        _hang("`__getitem__(2)` while serving dataset[2]", "mine: dataset")
    assert not isinstance(first.value, HungBefore)
    started = time.monotonic()
    with pytest.raises(HungBefore) as later:
        _hang("`__getitem__(0)` while serving dataset[0]", "mine: dataset", seconds=20)
    assert time.monotonic() - started < 1
    assert later.value.headline.startswith(
        "not run: `__getitem__(0)` while serving dataset[0] was not called, because this target interface hung "
        "earlier in this process (timed out after 0 s in `__getitem__(2)` while serving dataset[2], in tests/faults/")
    assert later.value.stack == first.value.stack and "time.sleep(30)" in later.value.stack


def test_another_interface_or_no_scope_still_gets_its_own_bound():
    with pytest.raises(CallTimedOut):
        _hang("`__getitem__(2)`", "mine: dataset")
    with hang_scope("mine: loss"), bounded("`loss()`", 5):
        pass
    with bounded("`__getitem__(3)`", 5):  # outside any scope (the report's own calls)
        pass
    with pytest.raises(CallTimedOut) as other:
        _hang("`__getitem__(2)`", "theirs: dataset")
    assert not isinstance(other.value, HungBefore)


ADAPTER = textwrap.dedent(
    """
    import time

    from parity.dataset.impl import impl_dataset
    from parity.targets import Target


    class _Hangs:
        def __init__(self, documents, config):
            self._served = impl_dataset(documents, config)
            self.document_index, self.shuffle_index = self._served.document_index, self._served.shuffle_index

        def __len__(self):
            return len(self._served)

        def __getitem__(self, idx):
            time.sleep(3600)


    def hangs_serving(documents, config):
        return _Hangs(documents, config)


    HANGS = Target(name="hangs-serving", description="serves nothing", expect="pass", dataset="hang_adapter:hangs_serving")
    """
)


@pytest.mark.long  # a pytest session of its own, in which each worker waits out one call bound
def test_a_hanging_dataset_costs_each_worker_one_bound(tmp_path):
    install_adapter(tmp_path, "hang_adapter", ADAPTER, {"hangs-serving": "hang_adapter:HANGS"})
    report = tmp_path / "junit.xml"
    test_bound, workers = 12, 2
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--parity-target", "hangs-serving", "-n", str(workers), "-p", "no:cacheprovider",
         "-q", f"--junitxml={report}", "--timeout", str(test_bound), "parity/suite"],  # a user's own --timeout
        cwd=REPOSITORY, capture_output=True, text=True, timeout=600,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
    )
    assert result.returncode == 1, result.stdout[-3000:]
    cases = list(ElementTree.parse(report).getroot().iter("testcase"))
    ran = [case for case in cases if case.find("skipped") is None]
    failed = {case.get("name"): (float(case.get("time")), case.find("failure").get("message"))
              for case in cases if case.find("failure") is not None}
    assert len(failed) == len(ran) >= 5, sorted(failed)  # every dataset property that applies, none spared
    hung = [name for name, (_, message) in failed.items() if "timed out after" in message and "not run" not in message]
    named = [name for name, (_, message) in failed.items() if "not run:" in message and "hung earlier" in message]
    assert 1 <= len(hung) <= workers and len(hung) + len(named) == len(failed), failed
    assert sum(seconds for seconds, _ in failed.values()) <= 2 * workers * bounds.call_bound(test_bound), failed
