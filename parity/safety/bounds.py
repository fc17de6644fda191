"""The bound every target call runs under, whether or not the user set one (docs/faults.md, Bounds).

A hanging target must end in a verdict that names the hung call, not in a killed process: pytest-timeout's
thread method ends the whole (xdist worker) process and its stack dump does not reach xdist's controller,
and a DDP launch that outlives its test leaves its ranks behind. So the harness bounds its own calls
*below* the per-test bound: a parity session puts that bound in ``$PARITY_TEST_BOUND_S`` (inherited by
ranks and subprocesses; 0: none), and a call bounded here gets it less a margin for the report and the
cleanup. Outside a session (``python -m parity``) the default per-test bound stands in for it.

In the main thread a bound is a ``SIGALRM`` timer whose handler raises :class:`CallTimedOut` inside the
hung call, with that call's stack. It is a ``BaseException``, as ``KeyboardInterrupt`` is: a target's
``except Exception`` cannot swallow it and Hypothesis does not take it for one more failing example to
shrink, so the test ends at once (what the thread method gives, without the process's end).

A hang is paid once. Inside a :func:`hang_scope` (the suite opens one per property test: the target and
its interface), the first call that times out is remembered for the process (one xdist worker), and
every later bounded call in the same scope fails at once with :class:`HungBefore`, naming the earlier
hang (its call, its test, its stack), instead of waiting out a bound of its own: a hung ``__getitem__``
would otherwise cost every dataset property 270 s and teach nothing new.
"""

from __future__ import annotations

import mmap
import os
import signal
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager

TEST_BOUND_ENV = "PARITY_TEST_BOUND_S"
#: The per-test bound a parity session gets when the user set none (pytest-timeout's ``--timeout``).
DEFAULT_TEST_BOUND_S = 300.0


def test_bound() -> float | None:
    """The per-test bound in force: ``$PARITY_TEST_BOUND_S``, else the default; None when it is 0."""
    seconds = float(os.environ.get(TEST_BOUND_ENV) or DEFAULT_TEST_BOUND_S)
    return seconds or None


def call_bound(test_bound_s: float | None = None) -> float | None:
    """Seconds a target call may take under a per-test bound (default :func:`test_bound`): that bound
    less a tenth of it, at least 5 s and at most 30 s. None when there is no bound."""
    test_bound_s = test_bound() if test_bound_s is None else test_bound_s or None
    if test_bound_s is None:
        return None
    return max(1.0, test_bound_s - min(30.0, max(5.0, test_bound_s / 10)))


def described(unit: str, source: str) -> str:
    """The bounds in force, for a run's header: ``300 s a test ($PARITY_TEST_BOUND_S), 270 s a target call``."""
    test = test_bound()
    if test is None:
        return f"none ({source} is 0)"
    return f"{test:g} s {unit} ({source}), {call_bound(test):g} s a target call or DDP launch"


class CallTimedOut(BaseException):
    """A target call outlived its bound; the message names the call and holds its stack."""

    def __init__(self, what: str, seconds: float, stack: str = "") -> None:
        self.what, self.seconds, self.stack = what, seconds, stack
        super().__init__(self.headline + (f"; the hung call's stack:\n{stack}" if stack else ""))

    @property
    def headline(self) -> str:
        """The message without the stack: ``timed out after 5 s in `__getitem__(7)` while serving dataset[7]``."""
        return f"timed out after {self.seconds:.0f} s in {self.what}"

    def __reduce__(self):  # it travels back from a forked child (parity/report/isolation.py)
        return type(self), (self.what, self.seconds, self.stack)


class HungBefore(CallTimedOut):
    """A call not made: an earlier call of the same target interface hung in this process."""

    def __init__(self, what: str, earlier: CallTimedOut, test: str) -> None:
        self.earlier, self.test = earlier, test
        super().__init__(what, 0.0, earlier.stack)

    @property
    def headline(self) -> str:
        return (f"not run: {self.what} was not called, because this target interface hung earlier in this "
                f"process ({self.earlier.headline}{f', in {self.test}' if self.test else ''})")

    def __reduce__(self):
        return type(self), (self.what, self.earlier, self.test)


#: scope -> the first call that timed out in it and the test it was in (this process's).
_HUNG: dict[str, tuple[CallTimedOut, str]] = {}
_SCOPE = threading.local()


@contextmanager
def hang_scope(scope: str) -> Iterator[None]:
    """Bounded calls in the body share ``scope`` (``"impl: dataset"``): after one hangs, the rest fail at once."""
    outer = getattr(_SCOPE, "name", None)
    _SCOPE.name = scope
    try:
        yield
    finally:
        _SCOPE.name = outer


def _current_test() -> str:
    """The running pytest test (``$PYTEST_CURRENT_TEST`` without its phase), '' outside pytest."""
    return os.environ.get("PYTEST_CURRENT_TEST", "").rsplit(" (", 1)[0]


_ARMED = threading.local()
#: Called with every bounded call's name as it starts: where a target may end its process, the last one
#: started is kept where the parent can read it (:class:`CallSlot`).
on_call: Callable[[str], None] | None = None


class CallSlot:
    """The name of the last target call a process started, in memory another process reads after this
    one has ended however it ended (``os._exit``, a signal): an anonymous shared mapping a forked child
    inherits (``path`` None), or a file of its own another process opens by ``path``. A write is a
    copy of at most :data:`SIZE` bytes, cheap enough for every ``__getitem__``."""

    SIZE = 512

    def __init__(self, path: str | os.PathLike | None = None) -> None:
        if path is None:
            self._map = mmap.mmap(-1, self.SIZE)
        else:
            with open(path, "a+b") as file:
                file.truncate(self.SIZE)
                self._map = mmap.mmap(file.fileno(), self.SIZE)

    def remember(self, what: str) -> None:
        encoded = what.encode(errors="replace")[: self.SIZE - 1]
        self._map[: len(encoded) + 1] = encoded + b"\0"

    def last(self) -> str:
        return self._map[:].split(b"\0", 1)[0].decode(errors="replace")

    def close(self) -> None:
        self._map.close()

    @classmethod
    def read(cls, path: str | os.PathLike) -> str:
        """What the process writing ``path`` last started ('' when nothing, or no such file)."""
        try:
            with open(path, "rb") as file:
                return file.read(cls.SIZE).split(b"\0", 1)[0].decode(errors="replace")
        except OSError:
            return ""


@contextmanager
def bounded(what: str, seconds: float | None = None) -> Iterator[None]:
    """Run the body under a bound (default :func:`call_bound`); an outer bound already armed holds.

    Where another ``SIGALRM`` timer is running (pytest-timeout's signal method, which a user may choose),
    this bound goes below it, as it goes below the per-test bound (:func:`call_bound` of the time the timer
    has left), and that timer is armed again on the way out with what it has left. Where the timer is due
    first, or off the main thread, the body runs unbounded here and the outer bound is what holds.
    """
    if on_call is not None:
        on_call(what)
    scope = getattr(_SCOPE, "name", None)
    if scope in _HUNG:
        raise HungBefore(what, *_HUNG[scope])
    seconds = call_bound() if seconds is None else seconds
    outer_left, outer_interval = signal.getitimer(signal.ITIMER_REAL)
    if seconds is not None and outer_left:
        seconds = min(seconds, call_bound(outer_left))
    main = threading.current_thread() is threading.main_thread()
    if seconds is None or getattr(_ARMED, "what", None) or not main or (outer_left and seconds >= outer_left):
        yield
        return
    started = time.monotonic()

    def expire(signum, frame):
        timed_out = CallTimedOut(what, time.monotonic() - started, "".join(traceback.format_stack(frame)[-12:]))
        if scope is not None:
            _HUNG.setdefault(scope, (timed_out, _current_test()))
        raise timed_out

    previous = signal.signal(signal.SIGALRM, expire)
    _ARMED.what = what
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        _ARMED.what = None
        if outer_left:  # the outer timer's own deadline, kept (a tiny delay where it has passed: it fires now)
            left = max(outer_left - (time.monotonic() - started), 1e-6)
            signal.setitimer(signal.ITIMER_REAL, left, outer_interval)
