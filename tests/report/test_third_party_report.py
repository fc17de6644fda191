"""A report whose target makes transformers talk on every call ends with one line per distinct message
(parity.safety.third_party, docs/report.md, Warnings), also when the target runs in its own child."""

from __future__ import annotations

import json
import logging
import warnings

import pytest
from transformers.utils import logging as transformers_logging

import parity.__main__
from parity.__main__ import main
from parity.dataset.impl import impl_dataset
from parity.targets import Target

ROPE = "Unrecognized keys in `rope_parameters` for 'rope_type'='yarn': {'truncate'}"
DEPRECATED = "`torch_dtype` is deprecated! Use `dtype` instead!"


class _Noisy:
    """impl's dataset, built and served as transformers-backed code is: every sample says the same two things."""

    def __init__(self, documents, config):
        self._served = impl_dataset(documents, config)
        self.document_index, self.shuffle_index = self._served.document_index, self._served.shuffle_index

    def __len__(self):
        return len(self._served)

    def __getitem__(self, idx):
        transformers_logging.get_logger("transformers.modeling_rope_utils").warning(ROPE)
        warnings.warn_explicit(DEPRECATED, FutureWarning,
                               "/venv/lib/python3.11/site-packages/transformers/configuration_utils.py", 917)
        return self._served[idx]


def noisy(documents, config):
    return _Noisy(documents, config)


@pytest.fixture
def noisy_target(monkeypatch):
    mine = Target(name="noisy", description="a target of yours", expect="pass", dataset=f"{__name__}:noisy")
    real = parity.__main__.get_target
    monkeypatch.setattr(parity.__main__, "get_target", lambda name: mine if name == "noisy" else real(name))


def test_each_distinct_message_once_with_its_count(noisy_target, capfd, tmp_path):
    written = tmp_path / "report.json"
    assert main(["--target", "noisy", "--only", "dataset-cache", "--json", str(written)]) == 0
    out, err = capfd.readouterr()
    assert ROPE not in err and DEPRECATED not in err
    lines = out.splitlines()
    assert len(lines) <= 150
    (rope,) = [line for line in lines if ROPE in line]
    (deprecated,) = [line for line in lines if DEPRECATED in line]
    counts = {entry["message"]: entry["count"] for entry in json.loads(written.read_text())["third_party_messages"]}
    assert rope == f"  transformers: {counts[ROPE]} x {ROPE}" and counts[ROPE] > 1
    assert deprecated == f"  transformers: {counts['FutureWarning: ' + DEPRECATED]} x FutureWarning: {DEPRECATED}"
    assert lines[lines.index(rope) - 1 if lines.index(rope) < lines.index(deprecated) else lines.index(deprecated) - 1] \
        .startswith("third-party warnings and log records: ")


def test_show_warnings_prints_them_as_they_come(noisy_target, capfd, tmp_path):
    # Beside transformers' own stream handler, a file: the target runs in a forked child, which writes there too.
    handler = logging.FileHandler(tmp_path / "said.log")
    logging.getLogger("transformers").addHandler(handler)
    try:
        assert main(["--target", "noisy", "--only", "dataset-cache", "--show-warnings"]) == 0
    finally:
        logging.getLogger("transformers").removeHandler(handler)
        handler.close()
    assert "third-party warnings and log records" not in capfd.readouterr().out
    assert (tmp_path / "said.log").read_text().count(ROPE) > 1  # reached transformers' handlers, every time
