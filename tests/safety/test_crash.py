"""A crash reads the same wherever it is reported: the exception, its message, the innermost frame, and the
target's call into a library where that frame is the library's (docs/design.md, Verdict kinds)."""

from __future__ import annotations

import re

import pytest
import torch

from parity.safety.crash import describe_raised, is_known, raised_in, raised_where, signature


def _raise(error: Exception):
    raise error


def _caught(error: Exception) -> Exception:
    with pytest.raises(type(error)) as caught:
        _raise(error)
    return caught.value


def test_a_crash_names_the_exception_and_where_it_was_raised_relative_to_the_repository():
    error = _caught(ValueError("boom"))
    line = _raise.__code__.co_firstlineno + 1
    assert raised_where(error) == f"tests/safety/test_crash.py:{line} (in _raise)"
    assert describe_raised(error) == f"ValueError: boom at tests/safety/test_crash.py:{line} (in _raise)"


def test_an_empty_message_and_a_missing_traceback_are_said_so():
    assert describe_raised(_caught(RuntimeError())).startswith("RuntimeError: (no message) at ")
    assert raised_where(KeyError("never raised")) == "<unknown>"


def test_a_known_crash_is_matched_by_a_part_of_its_signature():
    error = _caught(AssertionError("offset -1"))
    assert signature(error).startswith("AssertionError at tests/safety/test_crash.py:")
    assert is_known(signature(error), ("AssertionError at tests/safety/",))
    assert not is_known(signature(error), ("AssertionError at megatron/",))


def test_a_crash_inside_a_library_is_also_located_by_the_target_s_call_into_it():
    def loss():
        return torch.nn.functional.cross_entropy(torch.zeros(2, 3), torch.tensor([5, 0]))

    with pytest.raises(IndexError) as caught:
        loss()
    line = loss.__code__.co_firstlineno + 1
    assert re.fullmatch(r"torch/nn/functional\.py:\d+ \(in cross_entropy\), called from "
                        rf"tests/safety/test_crash\.py:{line} \(in loss\)", raised_where(caught.value))
    # What the DDP launcher reads back from a rank's error line (parity.training.launch.processes): the same two places.
    assert raised_in(f"the target crashed: {describe_raised(caught.value)}") == (
        "cross_entropy", "loss", f"tests/safety/test_crash.py:{line}")
    assert raised_in(describe_raised(_caught(ValueError("boom")))) == ("_raise", None, None)


class _RaisesInAWorker(torch.utils.data.Dataset):
    def __len__(self):
        return 2

    def __getitem__(self, idx):
        raise ValueError(f"no sample {idx}")


def test_a_dataloader_worker_s_crash_is_located_in_the_worker_not_in_torch():
    with pytest.raises(ValueError) as caught:
        list(torch.utils.data.DataLoader(_RaisesInAWorker(), num_workers=1))
    line = _RaisesInAWorker.__getitem__.__code__.co_firstlineno + 1
    assert describe_raised(caught.value) == (
        f"ValueError: no sample 0 at tests/safety/test_crash.py:{line} (in __getitem__), in DataLoader worker 0")


def test_a_crash_on_a_rank_is_read_back_from_the_rank_s_words_and_judged_as_the_target_s():
    """A loop that raises on a rank ends its launch; the launcher has only what the rank wrote. Read back, it is the
    target's crash with its signature (a target's known_crashes match it); the harness's own raise, a rank killed,
    or anything else stays a failure of the launch."""
    from parity.training.launch.processes import RankFailed

    said = ("rank 0 failed: RuntimeError: Loss is not finite (global_avg_loss=nan) at step 1. Stopping training. at "
            "torchtitan/trainer.py:995 (in train_step)\nTraceback (most recent call last): ...")
    crash = RankFailed(said).as_crash()
    assert crash.signature == "RuntimeError at torchtitan/trainer.py:995 (in train_step)"
    assert is_known(crash.signature, ("RuntimeError at torchtitan/trainer.py",)) and "Loss is not finite" in str(crash)
    for other in ("rank 0 failed: KeyError: 'w' at parity/training/causal/drivers/loop.py:12 (in run_loop)",
                  "rank 1 was killed by SIGABRT (signal 6):\nterminate called", "rank 0 failed: the target crashed"):
        assert RankFailed(other).as_crash() is None, other
