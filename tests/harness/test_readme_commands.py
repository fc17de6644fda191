"""Every shell command the README prints is exercised, so the README cannot go stale: each
``python -m parity`` command is parsed by the CLI's own parser (and the quick ones run), each pytest
option is one the plugins register, each ``pip install`` extra exists, each ``tox -e`` environment
is in tox.ini; under ``-m long`` the report commands run for real and the failing excerpt is the
report's own output."""

from __future__ import annotations

import re
import shlex
import tomllib
from pathlib import Path

import pytest

from parity.__main__ import COMMANDS, cli_parser, main
from parity.targets import OPTIONAL_TARGETS, get_target

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


def commands() -> list[list[str]]:
    """Every command line of the README's ``bash`` blocks, split as the shell splits it, comment dropped."""
    found = []
    for block in re.findall(r"```bash\n(.*?)```", README, flags=re.S):
        for line in block.splitlines():
            words = shlex.split(line, comments=True)
            if words:
                found.append(words)
    return found


def of(program: str) -> list[list[str]]:
    return [words for words in commands() if words[0] == program]


def parity_argv(words: list[str]) -> list[str]:
    assert words[:3] == ["python", "-m", "parity"], words
    return words[3:]


def test_the_readme_is_short_and_every_command_is_of_a_known_kind():
    assert len(README.splitlines()) <= 160
    assert {words[0] for words in commands()} <= {"pip", "pytest", "python"}
    assert len(of("python")) >= 4 and of("pytest") and of("pip")


@pytest.mark.parametrize("words", of("python"), ids=shlex.join)
def test_each_report_command_parses(words, monkeypatch):
    """The CLI's own parser accepts it (flags, choices); a target it names is registered, or is the
    README's own example target, ``my-trainer``."""
    argv = parity_argv(words)
    if argv and argv[0] in ("--help", "--version"):
        return
    args = cli_parser().parse_args(argv if argv and argv[0] in COMMANDS else ["report", *argv])
    named = getattr(args, "target", None) or []
    for name in [named] if isinstance(named, str) else named:
        if name != "my-trainer" and name not in {target.name for target in OPTIONAL_TARGETS}:  # those: docs/install.md
            get_target(name)


@pytest.mark.parametrize("argv", [["targets"], ["--version"], ["--help"]])
def test_the_quick_report_commands_run(argv, capsys):
    assert ["python", "-m", "parity", *argv] in of("python")
    try:
        assert main(argv) == 0
    except SystemExit as done:  # --help and --version exit through argparse
        assert done.code == 0
    assert capsys.readouterr().out


def test_each_pytest_option_is_registered(pytestconfig):
    for words in of("pytest"):
        for word in words[1:]:
            if word.startswith("-") and word not in ("-n", "-p", "-m"):
                pytestconfig.getoption(word.split("=")[0])  # ValueError for an option nobody registers
        if "--target" in words:
            get_target(words[words.index("--target") + 1])


def test_each_pip_install_names_a_real_extra():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    ci = (ROOT / ".ci" / "run").read_text()
    for words in of("pip"):
        assert words[1] == "install", words
        for requirement in (w for w in words[2:] if not w.startswith("-")):
            named = re.search(r"\[(.*)\]", requirement)
            assert named is None or set(named.group(1).split(",")) <= set(extras), requirement
            if requirement.startswith("torch=="):
                assert requirement in ci  # the CPU pin .ci/run installs


def readme_excerpt(command: str) -> list[str]:
    """The ``text`` block the README prints under ``command`` (a line of a ``bash`` block, ``# exit N:``
    beside it), without its elisions."""
    line = next(line for line in README.splitlines() if line.split("#")[0].strip() == command and "# exit" in line)
    block = README.split(line, 1)[1].split("```text\n", 1)[1].split("```", 1)[0]
    return [text for text in block.splitlines() if text.strip() not in ("...", "")]


@pytest.mark.long
def test_the_failing_excerpt_is_what_the_report_prints(monkeypatch, capsys):
    """``my-trainer`` as the README's adapter registers it, here a trainer that divides by the wrong
    count (the logits-style known bug, expected to pass): the excerpt's lines are the report's."""
    from dataclasses import replace

    import parity.cli.report

    broken = replace(get_target("known-bug:logits-local-mean"), name="my-trainer", expect="pass")
    real = parity.cli.report.get_target
    monkeypatch.setattr(parity.cli.report, "get_target", lambda name: broken if name == "my-trainer" else real(name))
    assert main(["--target", "my-trainer", "--quiet"]) == 1
    printed = capsys.readouterr().out.splitlines()
    for line in readme_excerpt("python -m parity --target my-trainer --quiet"):
        assert line in printed


@pytest.mark.long
def test_the_default_report_prints_the_readmes_verdict(capsys):
    assert main(["--quiet"]) == 0
    assert capsys.readouterr().out.splitlines() == readme_excerpt("python -m parity")
