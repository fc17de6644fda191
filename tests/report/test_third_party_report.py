"""A report whose target makes transformers talk on every call ends with one line per distinct message
(parity.safety.third_party, docs/report.md, Warnings), also when the target runs in its own child; what transformers
prints while remote code loads is counted too, so a passing report's first line is the harness's."""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from transformers.utils import logging as transformers_logging

import parity.cli.report
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
    real = parity.cli.report.get_target
    monkeypatch.setattr(parity.cli.report, "get_target", lambda name: mine if name == "noisy" else real(name))


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


STANDIN = Path(__file__).resolve().parent.parent / "assets" / "nemotron_standin"


@pytest.mark.long  # python -m parity in a fresh interpreter (docs/running.md, The long checks)
def test_a_passing_report_over_remote_code_that_makes_transformers_print_errors_begins_with_its_own_line(tmp_path):
    """NVIDIA's files on transformers 5.25 make it print ``[ERROR] `past_key_values` is part of Ministral3Model.forward's
    signature, but not documented`` (docs/report.md, Warnings) while their code is imported, before any scenario.
    Those files are not in this repository (docs/remote-code.md), so the stand-in's backbone is given the same
    undocumented argument under transformers' own ``auto_docstring``: the same lines, from the same code (and one
    no release documents, for the releases before 5.24, which document ``past_key_values``). The report, run as a user
    runs it, begins with the harness's line, and counts them once at the end."""
    folder = tmp_path / "standin"
    shutil.copytree(STANDIN, folder, ignore=shutil.ignore_patterns("__pycache__"))
    backbone = folder / "modeling_standin_backbone.py"
    text = backbone.read_text()
    for old, new in [("from transformers import Ministral3Model\n",
                      "from transformers import Ministral3Model\nfrom transformers.utils import auto_docstring\n"),
                     ("    def forward(self, input_ids=None, attention_mask=None, **kwargs):",
                      "    @auto_docstring\n    def forward(self, input_ids=None, attention_mask=None, past_key_values=None, "
                      "undocumented_knob=None, **kwargs):")]:
        assert old in text
        text = text.replace(old, new)
    backbone.write_text(text)
    run = subprocess.run(
        [sys.executable, "-m", "parity", "--only", "dataset-cache", "--no-ddp", "--nemotron-remote-code", str(folder)],
        capture_output=True, text=True, timeout=600, cwd=tmp_path,
        env={**os.environ, "HF_MODULES_CACHE": str(tmp_path / "modules"), "PARITY_NEMOTRON_REMOTE_CODE": ""},
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    lines = run.stdout.splitlines()
    assert lines[0] == f"oracle model: NVIDIA remote code from the folder {folder}", lines[:3]
    tally = lines.index(next(line for line in lines if line.startswith("third-party warnings and log records: ")))
    said = "[ERROR] `undocumented_knob` is part of StandinBackbone.forward's signature, but not documented."
    assert all("[ERROR]" not in line for line in lines[:tally]) and all(
        line.startswith("  transformers: 1 x [ERROR] `") for line in lines[tally + 1:])
    assert any(line.startswith(f"  transformers: 1 x {said}") for line in lines[tally + 1:]), lines[tally:]
    assert all(line.startswith("[parity] ") for line in run.stderr.splitlines()), run.stderr[-2000:]  # stderr: its own only
