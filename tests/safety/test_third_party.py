"""Third-party warnings, log records and printed lines are counted, not printed as they come (parity.safety.third_party)."""

from __future__ import annotations

import logging
import sys
import warnings

import pytest
from transformers.utils import logging as transformers_logging

from parity.report.isolation import run_in_child
from parity.safety import third_party

ROPE = "Unrecognized keys in `rope_parameters` for 'rope_type'='yarn': {'truncate'}"


def _transformers_says(times: int) -> None:
    logger = transformers_logging.get_logger("transformers.modeling_rope_utils")  # transformers' own handler
    for _ in range(times):
        logger.warning(ROPE)
        warnings.warn_explicit("`torch_dtype` is deprecated! Use `dtype` instead!", FutureWarning,
                               "/venv/lib/python3.11/site-packages/transformers/configuration_utils.py", 917)


def test_each_distinct_message_is_counted_and_nothing_is_printed(capfd):
    with third_party.captured() as tally:
        _transformers_says(96)
    assert capfd.readouterr().err == ""
    assert tally == {("transformers", ROPE): 96,
                     ("transformers", "FutureWarning: `torch_dtype` is deprecated! Use `dtype` instead!"): 96}
    assert third_party.summary_lines(tally) == [
        "third-party warnings and log records: 192 (2 distinct; --show-warnings prints them as they come)",
        "  transformers: 96 x FutureWarning: `torch_dtype` is deprecated! Use `dtype` instead!",
        f"  transformers: 96 x {ROPE}",
    ]


class _Kept(logging.Handler):
    """Stands for transformers' own stream handler: what it would have printed (pytest captures the real one)."""

    def __init__(self):
        super().__init__()
        self.said = []

    def emit(self, record):
        self.said.append(record.getMessage())


@pytest.fixture
def transformers_handler():
    logger = logging.getLogger("transformers")
    kept = _Kept()
    logger.addHandler(kept)
    yield kept
    logger.removeHandler(kept)


def test_after_the_block_every_logger_and_filter_is_as_it_was(transformers_handler, recwarn):
    logger = logging.getLogger("transformers")
    before = (list(logger.handlers), logger.propagate, list(logging.getLogger().handlers), list(warnings.filters))
    with third_party.captured():
        _transformers_says(1)
    assert transformers_handler.said == [] and len(recwarn) == 0
    assert (list(logger.handlers), logger.propagate, list(logging.getLogger().handlers), list(warnings.filters)) == before
    _transformers_says(1)
    assert transformers_handler.said == [ROPE] and len(recwarn) == 1  # said again where they were said before


def test_the_harness_own_words_still_reach_their_handlers(recwarn):
    kept = _Kept()
    logging.getLogger().addHandler(kept)
    try:
        with third_party.captured() as tally:
            warnings.warn_explicit("a note of the harness", UserWarning, "/clone/parity/table/record.py", 1)
            logging.getLogger("parity.report").warning("a record of the harness")
    finally:
        logging.getLogger().removeHandler(kept)
    assert not tally
    assert [str(w.message) for w in recwarn] == ["a note of the harness"] and kept.said == ["a record of the harness"]


def test_off_changes_nothing(transformers_handler, recwarn):
    with third_party.captured(on=False) as tally:
        _transformers_says(2)
    assert not tally and transformers_handler.said == [ROPE, ROPE] and len(recwarn) >= 1


def test_a_forked_child_counts_once_in_the_parent(capfd):
    with third_party.captured() as tally:
        _transformers_says(3)
        assert run_in_child(lambda: _transformers_says(5) or "done") == "done"
    assert tally[("transformers", ROPE)] == 8
    assert capfd.readouterr().err == ""


def test_a_long_message_is_cut_to_its_first_line():
    with third_party.captured() as tally:
        logging.getLogger("accelerate.utils").warning("first line\nsecond line")
        logging.getLogger("torch.distributed").warning("x" * 500)
    assert ("accelerate", "first line") in tally
    assert max(len(message) for _, message in tally) == third_party.MESSAGE_WIDTH


def test_a_logger_configured_during_the_block_is_counted_too():
    """transformers makes its stream handler when it is first imported, which may be inside a scenario."""
    kept = _Kept()
    with third_party.captured() as tally:
        late = logging.getLogger("latepackage.module")
        late.addHandler(kept)
        late.warning("said late")
    late.removeHandler(kept)
    assert tally == {("latepackage", "said late"): 1} and kept.said == []


def _printed_from(filename: str, text: str, end: str = "\n") -> None:
    """``print(text)`` as code at ``filename`` calls it (the file a line is attributed to)."""
    exec(compile(f"print({text!r}, end={end!r})", filename, "exec"), {})


def test_a_line_third_party_code_prints_is_counted_and_the_harness_own_pass(capfd):
    with third_party.captured() as tally:
        _printed_from("/venv/lib/python3.11/site-packages/somepackage/loading.py", "loaded 3 shards")
        _printed_from("/venv/lib/python3.11/site-packages/somepackage/loading.py", "a line without", end="")
        _printed_from("/venv/lib/python3.11/site-packages/somepackage/loading.py", " its end yet", end="")
        _printed_from("/clone/parity/report/text.py", "the harness's own line")
        print("a test's own line")
    assert capfd.readouterr().out == "the harness's own line\na test's own line\n"
    assert tally == {("somepackage", "loaded 3 shards"): 1, ("somepackage", "a line without its end yet"): 1}


def test_transformers_docstring_errors_printed_while_a_model_class_is_made_are_counted(capfd):
    """transformers prints ``[ERROR] `past_key_values` is part of ...'s signature, but not documented`` (with print, not
    its logger) when a model's code is imported: NVIDIA's remote code under transformers 5.25 says it five times."""
    from transformers import Ministral3Model
    from transformers.utils import auto_docstring

    with third_party.captured() as tally:
        class Backbone(Ministral3Model):
            @auto_docstring
            def forward(self, input_ids=None, past_key_values=None, undocumented_knob=None, **kwargs):
                return super().forward(input_ids=input_ids, **kwargs)

    assert capfd.readouterr().out == ""
    said = {(source, message.partition(" is part of ")[0]) for source, message in tally}
    assert ("transformers", "[ERROR] `undocumented_knob`") in said  # past_key_values too from 5.24, which renamed it
    assert all(message.startswith("[ERROR] `") for _, message in tally)


def test_stdout_is_what_it_was_after_the_block():
    before = sys.stdout
    with third_party.captured():
        assert sys.stdout is not before
    assert sys.stdout is before
