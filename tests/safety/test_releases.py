"""The supported releases, read from the package's own metadata, and the one-line refusal of another
(parity.safety.releases; docs/install.md, Supported releases)."""

from __future__ import annotations

import pytest

from parity.__main__ import main
from parity.safety import releases
from parity.safety.releases import UnsupportedRelease, check_supported, supported


def test_the_ranges_are_the_ones_pyproject_states():
    assert str(supported("transformers").specifier) == "<6,>=5.5"
    assert str(supported("megatron-core").specifier) == "<0.17,>=0.14"  # from the megatron extra
    assert supported("trl") is None  # users' TRL stays theirs


@pytest.mark.parametrize(("name", "version"), [("transformers", "5.5.0"), ("transformers", "5.24.0"),
                                               ("megatron-core", "0.14.0"), ("megatron-core", "0.16.1")])
def test_a_release_inside_its_range_is_accepted(name, version):
    check_supported(name, version)


@pytest.mark.parametrize(("name", "version"), [("transformers", "5.4.0"), ("transformers", "6.0.0"),
                                               ("megatron-core", "0.13.1"), ("megatron-core", "0.17.0")])
def test_a_release_outside_its_range_is_refused_in_one_line_naming_both(name, version):
    with pytest.raises(UnsupportedRelease) as refused:
        check_supported(name, version)
    message = str(refused.value)
    assert "\n" not in message and f"{name} {version} is installed" in message
    stated = f"{name}{supported(name).specifier}"
    assert f"supports {stated}" in message and f"pip install '{stated}'" in message


def test_a_package_the_harness_states_nothing_about_is_not_refused():
    check_supported(None)  # a target that requires nothing
    check_supported("trl", "0.1.0")


def test_the_cli_refuses_an_unsupported_transformers_before_any_work(monkeypatch, capsys):
    monkeypatch.setattr(releases, "installed", lambda name: "5.4.0" if name == "transformers" else None)
    assert main(["targets"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert "transformers 5.4.0 is installed, but the parity harness supports transformers<6,>=5.5" in line
