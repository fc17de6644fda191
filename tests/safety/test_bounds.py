"""The harness's own bound on a target call (parity.safety.bounds, docs/faults.md, Bounds) and the per-test bound a
parity session sets when the user set none (parity.safety.runner)."""

from __future__ import annotations

import os
import signal
import time
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from parity.safety.bounds import DEFAULT_TEST_BOUND_S, TEST_BOUND_ENV, CallTimedOut, bounded, call_bound
from parity.safety.crash import call_target
from parity.safety.runner import set_test_bound


class HangingDataset:
    """A target that hangs on one index and swallows every ``Exception`` on its way."""

    def __getitem__(self, index):
        try:
            if index == 7:
                time.sleep(60)
        except Exception:  # noqa: BLE001 - what a careless target does
            pass
        return index


def test_a_hung_call_ends_in_a_timeout_naming_the_call_and_its_stack():
    started = time.monotonic()
    with pytest.raises(CallTimedOut) as caught, bounded("`__getitem__(7)`", 0.2):
        HangingDataset()[7]
    assert time.monotonic() - started < 5
    assert str(caught.value).startswith("timed out after 0 s in `__getitem__(7)`; the hung call's stack:")
    assert "in __getitem__" in caught.value.stack and "time.sleep(60)" in caught.value.stack


def test_call_target_names_the_call(monkeypatch):
    monkeypatch.setattr("parity.safety.bounds.call_bound", lambda test_bound_s=None: 0.1)
    with pytest.raises(CallTimedOut, match=r"in `__getitem__\(7\)` while serving dataset\[7\]"):
        call_target("serving dataset[7]", HangingDataset().__getitem__, 7)
    assert call_target("serving dataset[3]", HangingDataset().__getitem__, 3) == 3


def test_hypothesis_does_not_shrink_past_a_timeout(monkeypatch):
    """A ``BaseException``: the test ends at the first hang, as the thread method makes it end."""
    calls = []

    @settings(max_examples=10, database=None, derandomize=True)
    @given(st.integers(0, 8))
    def prop(index):
        calls.append(index)
        with bounded(f"`__getitem__({index})`", 0.05):
            if index >= 7:
                time.sleep(60)

    with pytest.raises(CallTimedOut):
        prop()
    assert calls[-1] >= 7 and sum(index >= 7 for index in calls) == 1


def test_an_armed_bound_holds_inside_another():
    with pytest.raises(CallTimedOut, match="in outer"), bounded("outer", 0.2), bounded("inner", 30):
        time.sleep(5)


class OuterTimerFired(BaseException):
    """What the outer ``SIGALRM`` timer of these tests raises (pytest-timeout's signal method fails the test)."""


@pytest.fixture
def outer_timer():
    """Arm a ``SIGALRM`` timer as pytest-timeout's signal method does; disarmed and restored afterwards."""

    def fire(signum, frame):
        raise OuterTimerFired

    previous = signal.signal(signal.SIGALRM, fire)
    try:
        yield lambda seconds: signal.setitimer(signal.ITIMER_REAL, seconds)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_a_bound_goes_below_an_outer_timer_and_gives_it_back_its_time(outer_timer):
    outer_timer(30)
    with pytest.raises(CallTimedOut, match="in `__getitem__\\(7\\)`"), bounded("`__getitem__(7)`", 0.2):
        HangingDataset()[7]
    left = signal.getitimer(signal.ITIMER_REAL)[0]
    assert 20 < left < 30 and signal.getsignal(signal.SIGALRM).__name__ == "fire"
    with bounded("`__getitem__(3)`", 5):  # ends in time: the outer timer keeps its deadline
        HangingDataset()[3]
    assert 0 < signal.getitimer(signal.ITIMER_REAL)[0] < left


def half_of_the_outer_bound(test_bound_s=None):
    """A call bound that is quick to reach: half of what an outer timer has left (the session's 270 s else)."""
    return 270.0 if test_bound_s is None else test_bound_s / 2


def test_under_an_outer_timer_the_call_bound_is_below_what_it_has_left(outer_timer, monkeypatch):
    monkeypatch.setattr("parity.safety.bounds.call_bound", half_of_the_outer_bound)
    outer_timer(0.6)
    with pytest.raises(CallTimedOut), bounded("`__getitem__(7)`"):  # at 0.3 s, before the outer timer's 0.6 s
        HangingDataset()[7]


def test_an_outer_timer_due_first_holds(outer_timer):
    outer_timer(0.2)
    with pytest.raises(OuterTimerFired), bounded("`__getitem__(7)`", 5):
        time.sleep(5)


@pytest.mark.parametrize(("test_bound", "expected"), [(300, 270), (3600, 3570), (20, 15), (0, None)])
def test_the_call_bound_is_below_the_test_bound(test_bound, expected):
    assert call_bound(test_bound) == expected


class Config(SimpleNamespace):
    """What ``set_test_bound`` reads of a pytest config."""

    def __init__(self, timeout=None, ini="", method=None, plugin=True):
        super().__init__(option=SimpleNamespace(timeout=timeout, timeout_method=method), _ini=ini,
                         pluginmanager=SimpleNamespace(hasplugin=lambda name: plugin))

    def getvalue(self, name):
        return getattr(self.option, name)

    def getini(self, name):
        return self._ini if name == "timeout" else ""


@pytest.mark.parametrize(
    ("config", "env", "seconds", "source"),
    [
        (Config(), None, DEFAULT_TEST_BOUND_S, "set by the parity plugin; --timeout overrides"),
        (Config(timeout=3600.0), "60", 3600.0, "--timeout"),
        (Config(), "60", 60.0, "$PYTEST_TIMEOUT"),
        (Config(ini="120"), None, 120.0, "the ini's timeout"),
        (Config(timeout=0.0), None, 0.0, "--timeout"),
    ],
)
def test_an_explicit_bound_wins_and_the_session_says_which(monkeypatch, config, env, seconds, source):
    monkeypatch.delenv("PYTEST_TIMEOUT", raising=False)
    if env:
        monkeypatch.setenv("PYTEST_TIMEOUT", env)
    monkeypatch.setenv(TEST_BOUND_ENV, "")
    set_test_bound(config)
    assert (float(os.environ[TEST_BOUND_ENV]), config.parity_bound_source) == (seconds, source)
    assert config.option.timeout_method == "thread"  # the signal method's failure is one more example to shrink
    if source.startswith("set by"):
        assert config.option.timeout == DEFAULT_TEST_BOUND_S


def test_a_method_the_user_names_stands(monkeypatch):
    monkeypatch.setenv(TEST_BOUND_ENV, "")
    config = Config(timeout=3600.0, method="signal")
    set_test_bound(config)
    assert config.option.timeout_method == "signal"
