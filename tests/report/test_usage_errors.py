"""Bad input is refused at the boundary, before any work, in one line naming the field and what is
allowed (exit 2 from ``python -m parity``, a pytest usage error from the plugin); output files are
written atomically; a closed pipe ends the report quietly with the verdict's exit status."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from parity.__main__ import main
from parity.safety.usage import UsageError, check_output_path, write_atomically
from tests.installed import install_adapter


def refused(capsys, argv) -> str:
    """The one line ``python -m parity argv`` is refused with (exit 2, nothing on stdout)."""
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    return captured.err.strip().splitlines()[-1]


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["--seed", "-1"], "--seed must be an integer >= 0, got -1"),
        (["ddp", "--draw-seed", "-3"], "--draw-seed must be an integer >= 0, got -3"),
        (["ddp", "--draw", "-1"], "--draw must be an integer >= 0, got -1"),
        (["--examples", "0"], "--examples must be an integer >= 1, got 0"),
        (["--bound", "-1"], "--bound must be an integer >= 0, got -1"),
    ],
)
def test_ranges_are_usage_errors(capsys, argv, line):
    assert refused(capsys, argv).endswith(f"error: {line}")


def test_an_output_path_is_checked_before_the_run_and_nothing_is_written(capsys, tmp_path):
    (tmp_path / "old.json").write_text("previous run")
    assert refused(capsys, ["--json", str(tmp_path)]).endswith(f"--json {str(tmp_path)!r} is a directory; give a file path")
    missing = tmp_path / "no-such-folder" / "r.md"
    assert f"--markdown {str(missing)!r}: the folder" in refused(capsys, ["--markdown", str(missing)])
    same = str(tmp_path / "old.json")
    assert "--html and --json name the same file" in refused(capsys, ["--json", same, "--html", same])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.json"] and (tmp_path / "old.json").read_text() == "previous run"


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes anywhere")
def test_an_unwritable_folder_is_refused(tmp_path):
    tmp_path.chmod(0o500)
    try:
        with pytest.raises(UsageError, match="is not writable"):
            check_output_path("--json", str(tmp_path / "r.json"))
    finally:
        tmp_path.chmod(0o700)


def test_a_file_is_replaced_whole_or_not_at_all(tmp_path):
    path = tmp_path / "report.json"
    path.write_text("previous run")

    with pytest.raises(TypeError):
        write_atomically(path, 42)  # the write fails half way: the old file stays, no temporary is left
    assert path.read_text() == "previous run" and [p.name for p in tmp_path.iterdir()] == ["report.json"]
    write_atomically(path, "new run")
    assert path.read_text() == "new run" and [p.name for p in tmp_path.iterdir()] == ["report.json"]


ADAPTERS = textwrap.dedent(
    '''
    from parity.targets import Target

    def a_list(documents, config):
        return [1, 2, 3]

    NOT_A_TRAINER = object

    LIST = Target(name="returns-list", description="", expect="pass", dataset="user_adapters:a_list")
    TYPO = Target(name="typo", description="", expect="pass", dataset="user_adapters:a_lsit")
    NO_MODULE = Target(name="no-module", description="", expect="pass", loss="user_adaptres:LOSS")
    TRAINER = Target(name="not-a-trainer", description="", expect="pass", trainer="user_adapters:NOT_A_TRAINER")
    LOSS = Target(name="not-a-loss", description="", expect="pass", loss="user_adapters:a_list")
    '''
)


@pytest.fixture
def adapters(tmp_path, monkeypatch):
    """Installed-looking targets whose interfaces are wrong, one way each."""
    (tmp_path / "user_adapters.py").write_text(ADAPTERS)
    monkeypatch.syspath_prepend(str(tmp_path))
    import importlib

    import parity.targets

    module = importlib.import_module("user_adapters")
    extra = {t.name: t for t in (module.LIST, module.TYPO, module.NO_MODULE, module.TRAINER, module.LOSS)}
    real = parity.targets.get_target
    for command in ("parity.cli.report", "parity.cli.commands"):
        monkeypatch.setattr(f"{command}.get_target", lambda name: extra.get(name) or real(name))
    yield
    sys.modules.pop("user_adapters", None)


@pytest.mark.parametrize(
    ("target", "line"),
    [
        ("returns-list", "target 'returns-list': dataset='user_adapters:a_list': a dataset target returns a dataset with "
                         "__len__, __getitem__, document_index and shuffle_index (parity.targets.GPTDatasetLike), got list "
                         "without document_index and shuffle_index"),
        ("typo", "target 'typo': its dataset interface 'user_adapters:a_lsit' cannot be loaded: AttributeError:"),
        ("no-module", "cannot be loaded: ModuleNotFoundError: No module named 'user_adaptres'"),
        ("not-a-trainer", "target 'not-a-trainer': trainer='user_adapters:NOT_A_TRAINER': a trainer target is a "
                          "transformers.Trainer subclass, or a parity.training.shipped.ShippedTrainer naming one, got object"),
        ("not-a-loss", "a loss target has prepare_window, window_count, microbatch_loss and loss_is_scaled_for_ga"),
    ],
)
def test_an_interface_is_held_to_its_protocol_before_any_work(capsys, adapters, target, line):
    assert line in refused(capsys, ["--target", target])


@pytest.mark.long  # a fresh interpreter that imports torch: seconds the default run cannot spare
def test_a_closed_pipe_ends_quietly_with_the_verdicts_status():
    """``| head``: the reader goes away mid-report; no traceback, and the status is still the verdict's."""
    program = "import sys; from parity.cli.output import emit; emit('parity: ...\\n' * 100000); sys.exit(1)"
    command = f"{sys.executable} -c \"{program}\" | head -1"
    result = subprocess.run(["bash", "-o", "pipefail", "-c", command], capture_output=True, text=True, timeout=120)
    assert (result.stdout, result.stderr, result.returncode) == ("parity: ...\n", "", 1)


@pytest.mark.long  # a pytest session of its own
@pytest.mark.parametrize(("option", "environment", "field"), [
    (["--hypothesis-profile", "nigthly"], {}, "--hypothesis-profile"),
    ([], {"HYPOTHESIS_PROFILE": "nigthly"}, "$HYPOTHESIS_PROFILE"),
])
def test_an_unknown_hypothesis_profile_is_a_usage_error_listing_the_known_ones(option, environment, field):
    """In this repository's parity session (its ini sets ``parity_suite``), before any test is collected."""
    result = subprocess.run(
        [sys.executable, "-m", "pytest", *option, "-p", "no:cacheprovider", "--co", "-q", "tests/safety/test_threads.py"],
        capture_output=True, text=True, timeout=300, env={**os.environ, **environment}, cwd=Path(__file__).resolve().parents[2],
    )
    assert result.returncode == 4  # pytest's usage error
    assert f"ERROR: {field} 'nigthly' is not a Hypothesis profile; known profiles: ci, default, dev, nightly" in result.stderr
    assert "INTERNALERROR" not in result.stderr + result.stdout


@pytest.mark.long  # a pytest session of its own
def test_an_installed_target_with_a_wrong_interface_is_a_pytest_usage_error(tmp_path):
    """The plugin holds a selected installed target to its Protocols before any test: one line, exit 4."""
    install_adapter(tmp_path, "user_adapters", ADAPTERS, {"returns-list": "user_adapters:LIST"})
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--target", "returns-list", "-p", "no:cacheprovider", "--co", "-q",
         "tests/safety/test_threads.py"],
        capture_output=True, text=True, timeout=300, cwd=Path(__file__).resolve().parents[2],
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
    )
    assert result.returncode == 4
    assert "ERROR: target 'returns-list': dataset='user_adapters:a_list': a dataset target returns a dataset" in result.stderr
