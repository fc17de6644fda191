"""The target registry: built-ins, installed entry points, and a usage error for unknown names."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from types import SimpleNamespace

import pytest

from parity import targets
from parity.targets import Target, UnknownTargetError, all_targets, get_target

EXTRA = Target(name="my-dataset", description="an adapter", expect="pass", dataset="parity.dataset.impl:impl_dataset")


def test_every_builtin_interface_loads():
    for target in all_targets().values():
        for interface in ("dataset", "loss", "trainer"):
            if target.provides(interface):
                assert target.load(interface) is not None


def test_a_missing_interface_is_a_lookup_error():
    with pytest.raises(LookupError, match="provides no dataset interface"):
        get_target("known-bug:local-mean").load("dataset")


@pytest.mark.parametrize("path", ["impl.gpt_dataset.GPTDataset", ":GPTDataset", "impl.gpt_dataset:"])
def test_an_interface_path_without_module_and_attribute_is_refused_by_name(path):
    with pytest.raises(ValueError, match=f"an import path is 'module:attribute', got '{path}'"):
        Target(name="typo", description="", expect="pass", dataset=path).load("dataset")


def test_unknown_names_list_the_known_ones():
    with pytest.raises(UnknownTargetError, match="unknown target 'nope'; known targets: impl, known-bug"):
        get_target("nope")


@dataclass(frozen=True)
class InstalledEntryPoint:
    """Stands in for an ``importlib.metadata.EntryPoint`` of an installed package."""

    name: str
    loads: object

    def load(self):
        return self.loads


def _installed(monkeypatch, loads: object) -> None:
    point = InstalledEntryPoint(getattr(loads, "name", "extra"), loads)
    monkeypatch.setattr(targets, "entry_points", lambda group: [point] if group == targets.ENTRY_POINT_GROUP else [])


def test_an_installed_package_adds_a_target(monkeypatch):
    _installed(monkeypatch, EXTRA)
    assert get_target("my-dataset") is EXTRA


class BrokenEntryPoint:
    """An installed adapter whose import fails."""

    name = "broken-adapter"

    def load(self):
        raise ImportError("No module named 'missing_dependency'")


def test_a_broken_adapter_breaks_only_a_run_that_selects_it(monkeypatch):
    monkeypatch.setattr(targets, "entry_points", lambda group: [BrokenEntryPoint()])
    assert get_target("impl").name == "impl"  # never loads the entry point
    with pytest.raises(targets.TargetLoadError, match="'broken-adapter'.*failed to load: ImportError: No module named"):
        get_target("broken-adapter")
    assert any(isinstance(line, str) and "NOT LOADED" in line for line in targets.listed_targets())
    assert issubclass(targets.TargetLoadError, UnknownTargetError)  # a usage error wherever names are resolved


def test_one_name_registered_by_two_packages_is_a_usage_error_naming_both(monkeypatch):
    """Neither is loaded: which one would win depends on the order the packages are found in."""
    points = [SimpleNamespace(name="my-dataset", value=f"{package}.adapter:TARGET", dist=SimpleNamespace(name=package),
                              load=lambda: pytest.fail("a duplicate must not load")) for package in ("pkg-a", "pkg-b")]
    monkeypatch.setattr(targets, "entry_points", lambda group: points)
    with pytest.raises(targets.DuplicateTargetError, match=r"'my-dataset' is registered by more than one package: "
                       r"pkg-a \(pkg-a.adapter:TARGET\) and pkg-b \(pkg-b.adapter:TARGET\)"):
        get_target("my-dataset")
    assert issubclass(targets.DuplicateTargetError, UnknownTargetError)  # a usage error (exit 2) wherever names are resolved


def test_optional_targets_are_not_default_columns():
    assert all(target.requires is None for target in targets.default_targets().values())
    assert "megatron-core" not in targets.default_targets()


def test_an_entry_point_must_load_a_target(monkeypatch):
    _installed(monkeypatch, object())
    with pytest.raises(TypeError, match="must load a parity.targets.Target, got object"):
        all_targets()


def test_an_entry_point_cannot_replace_a_builtin(monkeypatch):
    _installed(monkeypatch, Target("impl", "impostor", "pass"))
    with pytest.raises(ValueError, match="redefines the target 'impl'"):
        all_targets()


def test_pytest_rejects_an_unknown_target():
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--parity-target", "nope", "--collect-only", "-q", "-p", "no:randomly"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 4  # pytest's usage-error status
    assert "unknown target 'nope'; known targets:" in result.stderr


def test_an_absent_optional_target_is_listed_and_refused_naming_what_it_needs(monkeypatch):
    """A built-in whose library is not installed is no target here, but it is never silent: listed as absent and
    refused by name, with what it needs (a supported range's install where the harness states one)."""
    from dataclasses import replace

    absent = Target(name="absent:lib", description="", expect="pass", loop="tests.causal.loops:WINDOW",
                    requires="parity-no-such-library")
    monkeypatch.setattr(targets, "OPTIONAL_TARGETS", (*targets.OPTIONAL_TARGETS, absent))
    said = "it needs parity-no-such-library, which is not installed here: docs/install.md, Optional targets"
    assert any(isinstance(line, str) and line.startswith("absent:lib") and said in line for line in targets.listed_targets())
    with pytest.raises(UnknownTargetError, match=f"unknown target 'absent:lib' \\({said}\\); known targets: impl"):
        get_target("absent:lib")
    assert "pip install 'megatron-core" in targets.needs(replace(absent, requires="megatron-core"))
