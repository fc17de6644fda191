"""``python -m parity repro``: a finding as a short pytest file that fails on the target's own package alone
(parity.fleet.repro, docs/dataset.md, Reproducers).

The default run writes impl's known cache bug up and holds the file to its promise (it fails on the bug, passes
on the fix, imports what it says); the long run does the same for known-bug:local-mean's loss property. The long run writes megatron-core's
two findings and runs each in a fresh virtual environment that holds megatron-core, numpy, torch and pytest but
not the harness: each fails with its message, and the loss-mask one passes on a patched copy of megatron-core.
"""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from parity.__main__ import cli_parser, main
from parity.fleet.repro import write_reproducers
from parity.targets import get_target
from tests.hostile import marker_pickle

pytestmark = pytest.mark.usefixtures("harness_self_check")


def top_level_imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name.partition(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module.partition(".")[0])
    return names


def test_impls_known_cache_bug_becomes_a_file_that_needs_only_impl(tmp_path):
    (written,) = write_reproducers(get_target("known-bug:cache-alias"), tmp_path, ["dataset/matches-oracle"], 100,
                                   say=lambda line: None)
    assert written.kept and written.standalone and written.fails_on_target and written.passes_on_fixed
    assert top_level_imports(written.path) == {"numpy", "torch", "impl"}
    text = written.path.read_text()
    assert len(text.splitlines()) < 60 and "Regenerate: python -m parity repro --target known-bug:cache-alias" in text
    assert "loss_mask differs at" in written.message and "expected 1.0" in written.message


@pytest.mark.long  # a hunt, then the file run twice (on the bug, on impl), each a pytest session: 12 s
def test_the_local_mean_loss_property_fails_on_it_and_passes_on_impl(tmp_path):
    (written,) = write_reproducers(get_target("known-bug:local-mean"), tmp_path, ["diffusion/regrouping"], 50,
                                   say=lambda line: None)
    assert written.kept and not written.standalone and written.passes_on_fixed
    assert "normalisation" in written.message and "the loss is divided by the wrong count" in written.message
    assert "@example(" in written.path.read_text() and "get_target('known-bug:local-mean')" in written.path.read_text()


def test_a_target_whose_properties_hold_writes_nothing_and_says_so(tmp_path, capsys):
    assert main(["repro", "--target", "impl", "--property", "dataset/matches-oracle", "--out", str(tmp_path),
                 "--examples", "5"]) == 1
    assert "no reproducer written for impl" in capsys.readouterr().out and not list(tmp_path.iterdir())


@pytest.mark.parametrize(("arguments", "field"), [
    (["--target", "nope"], "unknown target 'nope'"),
    (["--target", "impl", "--property", "dataset/nope"], "--property 'dataset/nope': a reproducer is written for"),
    (["--target", "impl", "--examples", "0"], "--examples"),
])
def test_a_bad_argument_is_a_usage_error_before_any_work(tmp_path, capsys, arguments, field):
    with pytest.raises(SystemExit) as stopped:
        main(["repro", *arguments, "--out", str(tmp_path / "out")])
    assert stopped.value.code == 2 and field in capsys.readouterr().err and not (tmp_path / "out").exists()


# --- megatron-core, in an environment without the harness ---------------------------------------------


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory) -> str:
    """A fresh virtual environment with megatron-core 0.16.1 (no dependencies), numpy, torch and pytest only."""
    folder = tmp_path_factory.mktemp("bare-venv")
    venv.create(folder, with_pip=True)
    python = str(folder / "bin" / "python")
    for packages in (["torch==2.13.0", "numpy", "pytest", "packaging>=24.2"], ["--no-deps", "megatron-core==0.16.1"]):
        subprocess.run([python, "-m", "pip", "install", "--quiet", *packages], check=True, timeout=900)
    without = subprocess.run([python, "-c", "import parity"], capture_output=True, cwd=folder, env={"PATH": "/usr/bin:/bin"})
    assert without.returncode != 0, "the harness is importable in the bare environment"
    return python


def patched_megatron(folder: Path) -> Path:
    """A copy of the installed megatron-core with the upstream fix of the loss-mask cache bug: FILL stores copies."""
    import megatron

    site = folder / "site"
    shutil.copytree(Path(next(iter(megatron.__path__))), site / "megatron")  # a namespace package: no __file__
    source = site / "megatron" / "core" / "datasets" / "gpt_dataset.py"
    text = source.read_text()
    for name in ("attention_mask", "loss_mask", "position_ids"):
        stored = f"self.cached_{name} = {name}\n"
        assert stored in text, f"megatron-core's FILL no longer reads {stored!r}"
        text = text.replace(stored, f"self.cached_{name} = {name}.clone() if {name} is not None else None\n")
    source.write_text(text)
    return site


def run_in(python: str, path: Path, site: Path | None = None) -> subprocess.CompletedProcess:
    environment = {"PATH": "/usr/bin:/bin", **({"PYTHONPATH": str(site)} if site else {})}
    return subprocess.run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(path)], cwd=path.parent,
                          capture_output=True, text=True, timeout=600, env=environment)


@pytest.mark.long  # a fresh virtual environment (a minute or two), and megatron's builder in it
@pytest.mark.needs("megatron-core")
def test_megatron_cores_findings_fail_on_megatron_core_alone(tmp_path, bare_python):
    out = tmp_path / "out"
    written = {r.property: r for r in write_reproducers(
        get_target("megatron-core"), out, ["dataset/matches-oracle", "pipeline/cache-key-separates-configs"], 100,
        say=lambda line: None)}
    assert all(r.kept and r.standalone for r in written.values()) and len(written) == 2, written
    loss_mask, cache_key = written["dataset/matches-oracle"].path, written["pipeline/cache-key-separates-configs"].path
    for path in (loss_mask, cache_key):
        assert top_level_imports(path) == {"numpy", "torch", "megatron"}, path
    failed = run_in(bare_python, loss_mask)
    assert failed.returncode == 1 and "loss_mask differs at" in failed.stdout, failed.stdout[-2000:] + failed.stderr[-2000:]
    failed = run_in(bare_python, cache_key)
    assert failed.returncode == 1, failed.stdout[-2000:] + failed.stderr[-2000:]
    assert "differs in add_extra_token_to_sequence only" in failed.stdout or "differs in drop_last" in failed.stdout
    fixed = run_in(bare_python, loss_mask, patched_megatron(tmp_path))
    assert fixed.returncode == 0, fixed.stdout[-2000:] + fixed.stderr[-2000:]


def test_the_cli_lists_it():
    assert "repro" in cli_parser().format_help()


@pytest.mark.needs("megatron-core")
def test_the_reports_megatron_column_names_its_upstream_defects_and_the_command():
    from parity.report.model import Options
    from parity.report.scenarios import SCENARIOS, UPSTREAM_ROW, run_report

    targets = [get_target("megatron-core"), get_target("megatron-core:fixed")]
    (result,) = run_report(targets, Options(under_test=("megatron-core",)), ["dataset-cache"], lambda line: None, SCENARIOS)
    columns = {column.name: column for column in result.columns}
    said = columns["megatron-core"].figures[UPSTREAM_ROW]
    assert "the index cache key" in said and "the loss-mask cache" in said
    assert said.endswith("python -m parity repro --target megatron-core --out DIR writes each up")
    assert UPSTREAM_ROW not in columns["megatron-core:fixed"].figures


@pytest.mark.long  # a pytest session in a fresh interpreter, then the write-up: about 13 s of a core
def test_after_a_failing_pytest_run_its_kept_examples_are_written_up_without_hunting(tmp_path, capsys):
    """The suite keeps each property's shrunk failing example in the run's cache folder, as JSON; ``--from-last-run``
    writes them up. A hostile pickle and a truncated JSON planted beside it run nothing and are named in one line each
    (exit 2), and the honest example is still written up (docs/security.md, Kept failures)."""
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-n", "0", "--parity-target", "known-bug:cache-alias",
         "-o", f"cache_dir={tmp_path / 'cache'}", "-k", "test_dataset__matches_oracle", "--pyargs", "parity.suite"],
        cwd=tmp_path, capture_output=True, text=True, timeout=600,
    )
    assert run.returncode == 1, run.stdout[-2000:]
    folder = tmp_path / "cache" / "d" / "parity-failures" / "known_bug_cache_alias"
    (honest,) = folder.iterdir()
    assert honest.name == "dataset__matches_oracle.json" and json.loads(honest.read_text())["schema"] == "parity-failure/1"
    (folder / "dataset__resume_agrees.pickle").write_bytes(marker_pickle(tmp_path / "marker"))
    (folder / "dataset__edits_do_not_leak.json").write_text(honest.read_text()[:100])
    assert main(["repro", "--target", "known-bug:cache-alias", "--from-last-run", str(tmp_path / "cache"),
                 "--out", str(tmp_path / "out")]) == 2
    out, err = capsys.readouterr()
    assert "test_known_bug_cache_alias__dataset__matches_oracle.py  (standalone): AssertionError: dataset[" in out
    assert [path.name for path in (tmp_path / "out").iterdir()] == ["test_known_bug_cache_alias__dataset__matches_oracle.py"]
    edits, resume = [line for line in err.splitlines() if " refused " in line]  # one line each, in the folder's order
    assert edits.startswith(f"python -m parity repro: refused {folder / 'dataset__edits_do_not_leak.json'}: does not parse "
                            "as JSON (Unterminated string"), err
    assert resume == (f"python -m parity repro: refused {folder / 'dataset__resume_agrees.pickle'}: a pickle (an older "
                      "harness kept these): never loaded, as loading one runs its code; delete it and run pytest again")
    assert not (tmp_path / "marker").exists()


def test_without_a_kept_example_from_last_run_says_so(tmp_path, capsys):
    assert main(["repro", "--target", "impl", "--from-last-run", str(tmp_path), "--out", str(tmp_path / "out")]) == 1
    assert "no failing example of impl kept under" in capsys.readouterr().out
