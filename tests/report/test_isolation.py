"""A target of yours that ends its process costs its own column only (parity/report/isolation.py).

Each fault is a dataset target registered by name (as a user's adapter would be) beside impl: the report
still holds impl's column and the oracle's, and the faulty column is a crash naming how the process ended
and the call it was in.
"""

from __future__ import annotations

import ctypes
import functools
import json
import os
import sys
import time

import pytest

import parity.cli.report
from parity.__main__ import main
from parity.dataset.impl import impl_dataset
from parity.report.isolation import ChildEnded, run_in_child
from parity.report.model import Options
from parity.report.scenarios import SCENARIOS, run_report
from parity.targets import Target, get_target


class _Ending:
    """impl's dataset whose third sample ends the process in the way ``how`` says."""

    def __init__(self, documents, config, how):
        self._served, self._how = impl_dataset(documents, config), how
        self.document_index, self.shuffle_index = self._served.document_index, self._served.shuffle_index

    def __len__(self):
        return len(self._served)

    def __getitem__(self, idx):
        if idx == 2:
            if self._how == "exit":
                os._exit(1)
            if self._how == "segfault":
                ctypes.string_at(0)
            if self._how == "hang":
                time.sleep(3600)
            raise SystemExit(3)
        return self._served[idx]


def exiting(documents, config):
    return _Ending(documents, config, "exit")


def segfaulting(documents, config):
    return _Ending(documents, config, "segfault")


def system_exiting(documents, config):
    return _Ending(documents, config, "system-exit")


def hanging(documents, config):
    return _Ending(documents, config, "hang")


def correct(documents, config):
    return impl_dataset(documents, config)


def _target(name: str, factory: str) -> Target:
    return Target(name=name, description="a target of yours", expect="pass", dataset=f"{__name__}:{factory}")


def _dataset_columns(target: Target, device: str = "cpu") -> dict:
    results = run_report([get_target("impl"), target], Options(device=device, under_test=(target.name,)),
                         ["dataset-cache"], lambda message: None, SCENARIOS)
    (result,) = results
    return {column.name: column for column in result.columns}


@pytest.mark.parametrize(
    ("factory", "how"),
    [("exiting", "exited with status 1"), ("segfaulting", "killed by SIGSEGV (signal 11)"),
     ("system_exiting", "exited with status 3")],
)
def test_a_target_that_ends_its_process_is_a_crash_beside_the_others(factory, how):
    columns = _dataset_columns(_target("mine", factory))
    assert list(columns) == ["mine", "impl", "oracle"]
    crash = columns["mine"]
    assert crash.crashed == f"the target ended the process: {how} in `__getitem__(2)` while serving dataset[2]"
    assert not crash.as_expected and crash.verdict.endswith("(UNEXPECTED)")
    assert columns["impl"].holds and columns["impl"].as_expected


def test_a_target_that_hangs_is_timed_out_in_its_call_beside_the_others(monkeypatch):
    """The column's bound is the call bound (parity.safety.bounds): the hung call named, every other column kept."""
    monkeypatch.setenv("PARITY_TEST_BOUND_S", "6")  # a call bound of 1 s
    columns = _dataset_columns(_target("mine", "hanging"))
    assert list(columns) == ["mine", "impl", "oracle"]
    assert columns["mine"].crashed == "timed out after 1 s in `__getitem__(2)` while serving dataset[2]"
    assert not columns["mine"].as_expected and columns["impl"].holds


def test_a_correct_target_in_its_child_gets_impls_figures():
    columns = _dataset_columns(_target("mine", "correct"))
    assert columns["mine"].holds and columns["mine"].figures == {**columns["impl"].figures}


def _arrive_slowly() -> str:
    time.sleep(2)
    return "7"


class _SlowToArrive:
    """Unpickled in a spawned child in 2 s, as a loaded machine's imports of torch and the target's module were."""

    def __reduce__(self):
        return _arrive_slowly, ()


def _imported(module: str) -> bool:
    return module in sys.modules


@pytest.mark.long  # a spawned child is a fresh interpreter (torch imported: seconds)
def test_a_spawned_child_s_start_is_not_charged_to_its_scenario_bound(monkeypatch, tmp_path):
    """A spawned child's start (over 5 s on a loaded CI machine, which once called it the target's hang) is
    bounded apart, the target's modules imported in it: the 1 s scenario bound begins once the child has started."""
    monkeypatch.setenv("PARITY_TEST_BOUND_S", "1")
    assert run_in_child(functools.partial(int, _SlowToArrive()), start="spawn") == 7
    (tmp_path / "slow_to_import.py").write_text("import time\n\ntime.sleep(2)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    slow = Target(name="slow", description="imported in 2 s", expect="pass", dataset="slow_to_import:dataset")
    assert slow.modules == ("slow_to_import",)
    assert run_in_child(functools.partial(_imported, "slow_to_import"), "spawn", slow.import_modules)
    with pytest.raises(ChildEnded, match=r"^the target's scenario timed out after 1 s$"):
        run_in_child(functools.partial(time.sleep, 60), start="spawn")
    monkeypatch.setattr("parity.report.isolation.SPAWN_START_S", 1.0)
    with pytest.raises(ChildEnded, match=r"^the target's spawned child did not start within 1 s \(a fresh"):
        run_in_child(functools.partial(int, _SlowToArrive()), start="spawn")


@pytest.mark.long  # the whole CLI report beside every built-in column (10 s)
def test_the_json_and_the_verdict_survive_a_target_that_ends_its_process(monkeypatch, tmp_path, capsys):
    mine = _target("mine", "exiting")
    real = parity.cli.report.get_target
    monkeypatch.setattr(parity.cli.report, "get_target", lambda name: mine if name == "mine" else real(name))
    written = tmp_path / "report.json"
    assert main(["--target", "mine", "--only", "dataset-cache", "--quiet", "--json", str(written)]) == 1
    assert capsys.readouterr().out.splitlines()[0] == "parity: UNEXPECTED verdicts in mine (dataset-cache)"
    assert "the target ended the process: exited with status 1" in written.read_text()
    assert json.loads(written.read_text())


def test_a_child_returns_its_value_and_raises_its_error():
    assert run_in_child(lambda: {"a": [1, 2]}) == {"a": [1, 2]}
    with pytest.raises(ValueError, match="its own words"):
        run_in_child(lambda: (_ for _ in ()).throw(ValueError("its own words")))
    with pytest.raises(ChildEnded, match="killed by SIGKILL"):
        run_in_child(lambda: os.kill(os.getpid(), 9))


def test_a_child_computes_after_the_parent_used_a_thread_team():
    """GNU OpenMP's team does not survive a fork: a child that joins it hangs (it did, in the report's
    training-run scenario after the parent had run the window scenario on two threads)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        for _ in range(50):
            torch.nn.functional.gelu(torch.randn(4096, 256)).sum()
        computed = run_in_child(lambda: float(torch.nn.functional.gelu(torch.ones(4096, 256)).sum()))
    finally:
        torch.set_num_threads(threads)
    assert computed == float(torch.nn.functional.gelu(torch.ones(4096, 256)).sum())


def test_a_child_that_hangs_outside_any_target_call_ends_at_the_test_bound(monkeypatch):
    import time

    monkeypatch.setenv("PARITY_TEST_BOUND_S", "2")
    with pytest.raises(ChildEnded, match=r"^the target's scenario timed out after 2 s$"):
        run_in_child(lambda: time.sleep(60))


@pytest.mark.long  # the whole CLI report beside every built-in column; the column itself is checked above
def test_the_report_s_bound_is_its_own_option_and_a_hang_is_its_column(monkeypatch, tmp_path, capsys):
    """``--bound 6`` (a call bound of 1 s) holds for this run only; the hung column is in the verdict and the JSON."""
    mine = _target("mine", "hanging")
    real = parity.cli.report.get_target
    monkeypatch.setattr(parity.cli.report, "get_target", lambda name: mine if name == "mine" else real(name))
    monkeypatch.delenv("PARITY_TEST_BOUND_S", raising=False)
    written = tmp_path / "report.json"
    assert main(["--target", "mine", "--only", "dataset-cache", "--bound", "6", "--json", str(written)]) == 1
    captured = capsys.readouterr()
    assert "[parity] bounds: 6 s a scenario of a target of yours (--bound), 1 s a target call" in captured.err
    assert captured.out.splitlines()[0] == "parity: UNEXPECTED verdicts in mine (dataset-cache)"
    assert "timed out after 1 s in `__getitem__(2)` while serving dataset[2]" in written.read_text()
    assert "PARITY_TEST_BOUND_S" not in os.environ


@pytest.mark.long  # each spawned child is a fresh interpreter (torch, transformers: 5 to 10 s)
@pytest.mark.parametrize(("factory", "crashed"), [
    ("segfaulting", "the target ended the process: killed by SIGSEGV (signal 11) in `__getitem__(2)` while serving dataset[2]"),
    ("hanging", "timed out after 3 s in `__getitem__(2)` while serving dataset[2]"),
    ("correct", None),
])
def test_on_cuda_a_target_of_yours_runs_in_a_spawned_child(monkeypatch, factory, crashed):
    """A forked child cannot use CUDA again: there each scenario of a target of yours is spawned. Run on CPU
    with the device's start method forced, the same columns as a forked child's."""
    monkeypatch.setenv("PARITY_TEST_BOUND_S", "8")
    monkeypatch.setattr("parity.report.scenarios.start_method", lambda device: "spawn")
    columns = _dataset_columns(_target("mine", factory))
    assert list(columns) == ["mine", "impl", "oracle"] and columns["impl"].holds
    assert columns["mine"].crashed == crashed
    assert bool(columns["mine"].holds) is (crashed is None)
