"""``python -m parity`` reads like its manual: the verdict, the JSON, Markdown and HTML, one-line usage errors."""

from __future__ import annotations

import subprocess
import sys

import pytest

from parity.__main__ import main
from parity.devices import cuda_available


def usage_error(capsys, argv) -> str:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    return capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--only", "nope"], "invalid choice: 'nope' (choose from"),
        (["--dtype", "float8"], "invalid choice: 'float8' (choose from 'float32', 'float64', 'bfloat16', 'float16')"),
        (
            ["--dtype", "float16"],
            (
                "dtype 'float16' is trained only under TrainingArguments(fp16=True), whose loss scaling "
                "accelerate applies on cuda only; on 'cpu', fp16=True would silently train in float32"
            ),
        ),
        (["--device", "tpu"], "invalid choice: 'tpu' (choose from 'cpu', 'cuda', 'auto')"),
        (["--target", "nope"], "unknown target 'nope'; known targets: impl, known-bug:cache-accumulate"),
        (["--examples", "0"], "--examples must be an integer >= 1, got 0"),
    ],
)
def test_usage_errors_name_the_valid_values(capsys, argv, message):
    assert message in usage_error(capsys, argv)


@pytest.mark.skipif(cuda_available(), reason="this machine has a GPU")
def test_asking_for_cuda_without_a_gpu_is_a_usage_error(capsys):
    assert "device 'cuda' was asked for, but torch sees no CUDA device" in usage_error(capsys, ["--device", "cuda"])


@pytest.mark.long  # a fresh interpreter (10 s); the messages themselves are checked in process above
def test_a_user_error_prints_no_traceback():
    result = subprocess.run(
        [sys.executable, "-m", "parity", "--only", "nope"], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith("python -m parity report: error:")


def test_one_help_lists_every_subcommand(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    listed = capsys.readouterr().out
    for command in ("report", "bench", "targets", "ddp"):
        assert command in listed


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["bench", "--seeds", "0"], "python -m parity bench: error: --seeds must be at least 1"),
        (["ddp", "--target", "known-bug:cache-alias"], "provides no trainer interface"),
        (["ddp", "--world-size", "3"], "invalid choice: 3 (choose from 2)"),
        (["ddp", "--dtype", "float16"], "On 'cpu' use one of float32, float64, bfloat16"),
    ],
)
def test_subcommand_usage_errors_name_the_problem(capsys, argv, message):
    assert message in usage_error(capsys, argv)


def test_report_is_the_default_command(capsys):
    assert main(["report", "--only", "dataset-cache"]) == main(["--only", "dataset-cache"]) == 0


def test_every_shipped_trainer_is_under_test_and_float16_runs_on_the_cpu_saying_how(capsys):
    """impl's trainer and the logits-style one (impl/logits_trainer.py) are both columns under test by default, in
    every trainer scenario (one rank and two); the float16 corners run on the CPU through the scaler accelerate sets
    up on CUDA, and the scenario's title says so (docs/report.md, Scenarios)."""
    assert main(["--only", "float16"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert out.startswith("parity: every impl column holds and every known bug is caught")
    assert "on the cpu through torch's cpu GradScaler and float16 autocast, as accelerate sets them up on cuda" in out
    assert "impl logits ---" in out and "training/any-run-matches holds: 1 corner holds: 1 corner" in out


def test_targets_lists_every_registered_target(capsys):
    assert main(["targets"]) == 0
    listed = capsys.readouterr().out
    for name in ("impl", "known-bug:cache-alias", "known-bug:cache-accumulate", "known-bug:local-mean"):
        assert name in listed


def test_the_dataset_scenario_shows_the_leak(capsys):
    """impl in full; the known bugs, controls, a line each with what they get wrong; in full with --controls."""
    assert main(["--only", "dataset-cache"]) == 0
    out = capsys.readouterr().out
    assert "samples differing from the oracle" in out and "outside budget (caught)" not in out
    assert "control known-bug:cache-alias: caught as expected (10 of 11 samples of a resumed run differ" in " ".join(out.split())
    assert main(["--only", "dataset-cache", "--controls"]) == 0
    assert capsys.readouterr().out.count("outside budget (caught)") == 2


def test_quiet_markdown_and_html_in_one_run(capsys, tmp_path):
    pytest.importorskip("matplotlib")
    markdown, page = tmp_path / "r.md", tmp_path / "r.html"
    assert main(["--only", "dataset-cache", "--quiet", "--markdown", str(markdown), "--html", str(page)]) == 0
    assert capsys.readouterr() == (
        "parity: every impl column holds and every known bug is caught\n",
        f"[parity] wrote {markdown} (markdown)\n[parity] wrote {page} (html)\n",
    )
    assert markdown.read_text().startswith("## ✅ parity: every impl column holds and every known bug is caught\n")
    assert page.read_text().count('<img src="data:image/png;base64,') == 2  # a plot per dataset target that differs


def test_html_without_matplotlib_is_one_line_naming_the_extra(capsys, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if it were not installed: import fails
    assert main(["--only", "dataset-cache", "--html", str(tmp_path / "r.html")]) == 2
    printed = capsys.readouterr()
    assert printed.err.splitlines() == [
        "python -m parity report: --html draws its plots with matplotlib: pip install 'matplotlib>=3.8'"
    ]
    assert printed.out == "" and not (tmp_path / "r.html").exists()
