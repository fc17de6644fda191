"""A crash reads the same wherever it is reported: the exception, its message, the innermost frame."""

from __future__ import annotations

import pytest

from parity.crash import describe_raised, is_known, raised_where, signature


def _raise(error: Exception):
    raise error


def _caught(error: Exception) -> Exception:
    with pytest.raises(type(error)) as caught:
        _raise(error)
    return caught.value


def test_a_crash_names_the_exception_and_where_it_was_raised_relative_to_the_repository():
    error = _caught(ValueError("boom"))
    line = _raise.__code__.co_firstlineno + 1
    assert raised_where(error) == f"tests/harness/test_crash.py:{line} (in _raise)"
    assert describe_raised(error) == f"ValueError: boom at tests/harness/test_crash.py:{line} (in _raise)"


def test_an_empty_message_and_a_missing_traceback_are_said_so():
    assert describe_raised(_caught(RuntimeError())).startswith("RuntimeError: (no message) at ")
    assert raised_where(KeyError("never raised")) == "<unknown>"


def test_a_known_crash_is_matched_by_a_part_of_its_signature():
    error = _caught(AssertionError("offset -1"))
    assert signature(error).startswith("AssertionError at tests/harness/test_crash.py:")
    assert is_known(signature(error), ("AssertionError at tests/harness/",))
    assert not is_known(signature(error), ("AssertionError at megatron/",))
