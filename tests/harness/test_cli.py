"""``python -m parity`` reads like its manual: the verdict, the JSON, and one-line usage errors."""

from __future__ import annotations

import json
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
        (["--dtype", "float16"], "invalid choice: 'float16' (choose from 'float32', 'float64')"),
        (["--device", "tpu"], "invalid choice: 'tpu' (choose from 'cpu', 'cuda', 'auto')"),
        (["--target", "nope"], "unknown target 'nope'; known targets: impl, known-bug:cache-accumulate"),
    ],
)
def test_usage_errors_name_the_valid_values(capsys, argv, message):
    assert message in usage_error(capsys, argv)


@pytest.mark.skipif(cuda_available(), reason="this machine has a GPU")
def test_asking_for_cuda_without_a_gpu_is_a_usage_error(capsys):
    assert "device 'cuda' was asked for, but torch sees no CUDA device" in usage_error(capsys, ["--device", "cuda"])


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
    ],
)
def test_subcommand_usage_errors_name_the_problem(capsys, argv, message):
    assert message in usage_error(capsys, argv)


def test_report_is_the_default_command(capsys):
    assert main(["report", "--only", "diffusion-window"]) == main(["--only", "diffusion-window"]) == 0


def test_targets_lists_every_registered_target(capsys):
    assert main(["targets"]) == 0
    listed = capsys.readouterr().out
    for name in ("impl", "known-bug:cache-alias", "known-bug:cache-accumulate", "known-bug:local-mean"):
        assert name in listed


def test_the_window_scenario_holds_for_impl_and_catches_the_bug(capsys, tmp_path):
    path = tmp_path / "report.json"
    assert main(["--only", "diffusion-window", "--json", str(path)]) == 0
    printed = capsys.readouterr()
    assert "within budget (ok)" in printed.out and "outside budget (caught)" in printed.out
    assert "[parity] diffusion-window: impl" in printed.err
    report = json.loads(path.read_text())
    (scenario,) = report["scenarios"]
    assert report["as_expected"] and scenario["verdicts"] == {
        "known-bug:local-mean": "outside budget (caught)",
        "impl": "within budget (ok)",
    }
    impl = next(c for c in scenario["columns"] if c["name"] == "impl")
    assert impl["figures"]["mask counts"] == [7, 10]
    # the oracle's rows are on impl's own draws: impl sits at the oracle's own float32 error
    assert impl["figures"]["max |grad - golden|"] <= impl["figures"]["grad budget (largest)"]
    assert impl["figures"]["oracle: max |grad - golden|"] > 0


def test_the_dataset_scenario_shows_the_leak(capsys):
    assert main(["--only", "dataset-cache"]) == 0
    out = capsys.readouterr().out
    assert "samples differing from the oracle" in out and out.count("outside budget (caught)") == 2
