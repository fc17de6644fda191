"""The harness as a pytest plugin: the ``--parity-*`` options, profiles, markers and target fixtures.

Installed as the ``parity`` plugin (a ``pytest11`` entry point), so the property suite runs against
an installed target from any repository, without a clone of this one::

    pytest --pyargs parity.suite --parity-target my-dataset   # or: pytest -p parity ... when autoload is off

The plugin is inert until asked (docs/design.md, Test-suite practice). In a project that merely has
the package installed it adds its option group to ``pytest --help`` and nothing else: it imports
neither Hypothesis nor torch, sets no environment variable and no thread count, registers no marker,
and its fixtures are only used by tests that ask for them. It acts only in a *parity session*:
``--parity-target`` (or its short spelling) given, or the project's ini names one (``parity_target``) or
sets ``parity_suite = true`` (this repository does). Its options are namespaced; the short spellings ``--target``,
``--nemotron-remote-code`` and ``--require-pinned-revision`` are added only where no other plugin or
conftest owns them, so a project's own ``--target`` keeps working.
"""

from __future__ import annotations

import os
import sys

import pytest

from parity.safety.threads import freeze_heap, share_cores, wait_passively

MARKERS = {
    "cuda": "needs a CUDA device (skips cleanly without one)",
    "distributed": "launches real torch.distributed process groups",
    "slow": "heavier cases; still in the default run unless deselected with -m 'not slow'",
}

#: The namespaced options with a short spelling, which is added only where nobody else owns it.
OPTIONS = {
    "--parity-target": ("--target", dict(
        dest="parity_target",
        default=None,
        metavar="NAME",
        help="implementation the properties run against (default: impl); see `python -m parity targets`",
    )),
    "--parity-nemotron-remote-code": ("--nemotron-remote-code", dict(
        dest="parity_nemotron_remote_code",
        default=None,
        metavar="FOLDER|ORG/NAME[@REV]",
        help="NVIDIA's remote code as the oracle model: a local folder with its config.json and *.py, or a Hub id "
        "read through the Hugging Face cache (config.json and *.py only) (default: $PARITY_NEMOTRON_REMOTE_CODE)",
    )),
    "--parity-require-pinned-revision": ("--require-pinned-revision", dict(
        dest="parity_require_pinned_revision",
        action="store_true",
        default=False,
        help="refuse a --parity-nemotron-remote-code Hub id whose revision is not a commit hash",
    )),
}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("parity", "parity harness")
    for name, (_, attributes) in OPTIONS.items():
        group.addoption(name, **attributes)
    group.addoption(
        "--parity-strict-precision",
        action="store_true",
        default=False,
        help="a precision finding (float32 arithmetic inside a float64 run) fails a property instead of "
        "being a note on a passing verdict (docs/budget.md)",
    )
    group.addoption(
        "--parity-database",
        default=None,
        metavar="PATH|redis://HOST:PORT/DB|github-artifact://OWNER/REPO[/ARTIFACT]",
        help="the example database of every profile, keyed by target and version (default: $PARITY_DATABASE; "
        "without either, each profile keeps its own) (docs/fleet.md)",
    )
    group.addoption(
        "--parity-database-mode",
        default=None,
        metavar="read-only|read-write",
        help="read-write under the nightly profile, else read-only beside the local .hypothesis/examples "
        "(default: $PARITY_DATABASE_MODE)",
    )
    group.addoption(
        "--parity-replay",
        action="store_true",
        default=False,
        help="run only the examples the database holds (Hypothesis's reuse phase): nothing drawn, nothing shrunk",
    )
    parser.addini("parity_suite", type="bool", default=False, help="this project runs the parity property suite")
    parser.addini("parity_target", default="", help="this project's parity target when --parity-target is not given "
                  "(a parity session, as parity_suite = true is)")


@pytest.hookimpl(hookwrapper=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser, args: list[str]):
    """Before the conftests load: passive OpenMP waiting in a session that asks for parity (before any
    conftest can import torch). After them, once every plugin and root conftest has added its options:
    the short spellings nobody owns."""
    if selected_target(early_config, early_config.known_args_namespace) or early_config.getini("parity_suite"):
        wait_passively()
    yield
    owned = _option_names(parser)
    if owned is None:
        return
    group = parser.getgroup("parity")
    for name, (short, attributes) in OPTIONS.items():
        if short not in owned:
            group.addoption(short, **{**attributes, "help": f"short for {name}"})


def _option_names(parser: pytest.Parser) -> set[str] | None:
    """Every option string registered so far; None where this pytest keeps them elsewhere (then no short spelling)."""
    groups = getattr(parser, "_groups", None)
    anonymous = getattr(parser, "_anonymous", None)
    if groups is None or anonymous is None:
        return None
    return {name for group in {id(g): g for g in (anonymous, *groups)}.values() for option in group.options
            for name in option.names()}


def selected_target(config: pytest.Config, options=None) -> str | None:
    """The target named by ``--parity-target``, else by the project's ``parity_target`` ini option."""
    named = getattr(options, "parity_target", None) if options is not None else config.getoption("parity_target")
    return named or config.getini("parity_target") or None


def is_parity_session(config: pytest.Config) -> bool:
    return selected_target(config) is not None or bool(config.getini("parity_suite"))


#: The Hypothesis profiles as they stood before this session loaded its own (parity.safety.profiles).
_PROFILES_BEFORE = pytest.StashKey()


def pytest_unconfigure(config: pytest.Config) -> None:
    if _PROFILES_BEFORE in config.stash:  # a session run inside another's process leaves that one's profile loaded
        from parity.safety.profiles import restore_profiles

        restore_profiles(config.stash[_PROFILES_BEFORE])


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    config.parity_target = config.parity_remote_code = config.parity_database = None
    if not is_parity_session(config):
        return
    wait_passively()  # a no-op where the conftests already asked (and too late only if one imported torch)
    for name, description in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {description}")
    from parity.safety.profiles import UnknownProfile, check_profile, kept_profiles, load_default_profile, register_profiles

    config.stash[_PROFILES_BEFORE] = kept_profiles()  # put back when this session ends (pytest_unconfigure)
    register_profiles()
    # Before Hypothesis's own plugin, which loads ``--hypothesis-profile`` when one is given (an unknown
    # name would be its INTERNALERROR there): a usage error listing the known profiles instead.
    named = config.getoption("hypothesis_profile", default=None)
    try:
        if named is not None:
            check_profile("--hypothesis-profile", named)
        else:
            load_default_profile()
    except UnknownProfile as error:
        raise pytest.UsageError(str(error)) from None
    from parity.safety.runner import RunnerSafety, set_test_bound

    set_test_bound(config)  # before pytest-timeout reads its settings (docs/faults.md, Bounds)
    config.pluginmanager.register(RunnerSafety(config), "parity-runner-safety")
    if selected_target(config) and not hasattr(config, "workerinput"):  # a run naming its target ends with its table
        from parity.suite.outcomes import PropertyTable

        config.pluginmanager.register(PropertyTable(), "parity-property-table")

    from parity.safety.releases import UnsupportedRelease, check_supported
    from parity.safety.usage import UsageError
    from parity.targets import UnknownTargetError, builtin_targets, get_target

    try:
        config.parity_target = get_target(selected_target(config) or "impl")
        for name in ("transformers", config.parity_target.requires):  # refused before any work (docs/install.md)
            check_supported(name)
        if config.parity_target.name not in builtin_targets() and not hasattr(config, "workerinput"):
            from parity.contracts import preflight  # a target of yours, held to its interfaces once, before any test

            preflight(config.parity_target)
    except (UnknownTargetError, UnsupportedRelease, UsageError) as error:
        raise pytest.UsageError(str(error)) from None
    if config.getoption("--parity-strict-precision"):  # through the environment, so DDP ranks see it too
        from parity.compare import STRICT_PRECISION_ENV

        os.environ[STRICT_PRECISION_ENV] = "1"
    config.parity_remote_code = _activate_remote_code(config)
    config.parity_database = _use_database(config)
    if hasattr(config, "workerinput") or not config.getoption("numprocesses", default=None):  # where tests run
        config.parity_workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
        _share_cores_once_torch_is_in(config)


def _share_cores_once_torch_is_in(config: pytest.Config) -> None:
    """torch's threads shared between the workers once this process has torch (at once, after collection or before a
    test): a session whose tests never import it, a project's own or a fresh-interpreter check of this one, does not
    pay torch's import (seconds) for a thread count."""
    workers = getattr(config, "parity_workers", None)
    if workers is not None and "torch" in sys.modules:
        share_cores(workers)
        config.parity_workers = None


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    _share_cores_once_torch_is_in(item.config)


def _use_database(config: pytest.Config):
    """The example database of ``--parity-database`` in the session's profile (parity.fleet.database), a bad
    setting being a usage error; the profile's own database without one."""
    from hypothesis import settings

    from parity.fleet import database
    from parity.safety.profiles import default_profile

    profile = config.getoption("hypothesis_profile", default=None) or default_profile()
    try:
        setting = database.database_setting(
            config.getoption("--parity-database") or os.environ.get(database.DATABASE_ENV),
            config.getoption("--parity-database-mode") or os.environ.get(database.MODE_ENV),
            profile,
        )
        replay = config.getoption("--parity-replay")
        if replay and setting is None and settings.get_profile(profile).database is None:
            raise database.DatabaseSettingError(f"--parity-replay: the {profile} profile keeps no database; name one "
                                                f"with --parity-database ({database.FORMS})")
        database.load_into_profile(profile, setting, config.parity_target, replay)
    except database.DatabaseSettingError as error:
        raise pytest.UsageError(str(error)) from None
    return setting


def _activate_remote_code(config: pytest.Config):
    """NVIDIA's code as the oracle model (``oracle.remote_code.activate_remote_code``): resolved, loaded
    and probed once here, a bad name or code this transformers cannot run being a usage error. An xdist
    worker takes the folder the controller resolved (inherited through the environment), so every
    process runs the same snapshot."""
    from oracle.remote_source import REMOTE_CODE_ENV

    worker = hasattr(config, "workerinput")
    named = os.environ.get(REMOTE_CODE_ENV) if worker else config.getoption("parity_nemotron_remote_code")
    if not (named or os.environ.get(REMOTE_CODE_ENV)):
        return None  # the built-in oracle; importing the model code here would cost an xdist controller 4 s
    from oracle.remote_code import RemoteCodeError, activate_remote_code

    try:
        source = activate_remote_code(named, config.getoption("parity_require_pinned_revision") and not worker)
    except (RemoteCodeError, ValueError) as error:
        raise pytest.UsageError(str(error)) from None
    warning = source and source.unpinned_warning()
    if warning and not worker:
        config.issue_config_time_warning(UnpinnedRevisionWarning(warning), stacklevel=2)
    return source


class UnpinnedRevisionWarning(UserWarning):
    """The remote code was named by a branch or tag, which can move: the run names the commit it trusted."""


def pytest_report_header(config: pytest.Config) -> list[str] | None:
    lines = []
    target = getattr(config, "parity_target", None)
    if target is not None:
        installed = f"; {target.requires} {target.version}" if target.requires else ""
        lines.append(f"parity target: {target.name} ({target.description}{installed}); expected to {target.expect}")
    source = getattr(config, "parity_remote_code", None)
    if source is not None:
        lines += source.describe()
    setting = getattr(config, "parity_database", None)
    if setting is not None:
        from parity.fleet.database import target_prefix

        seeded = config.getoption("hypothesis_seed", default=None) is not None
        where = "off: --hypothesis-seed switches Hypothesis's database off" if seeded else setting.describe()
        lines.append(f"parity database: {where}; keys under {target_prefix(target).decode()}")
    return lines or None


# --- fixtures: each property receives the selected target's interface, or is skipped cleanly ----


@pytest.fixture(scope="session")
def target(pytestconfig: pytest.Config):
    if pytestconfig.parity_target is None:
        pytest.skip("not a parity session: pass --parity-target NAME (or set parity_suite = true in the ini)")
    return pytestconfig.parity_target


def target_interface(target, interface: str):
    """The target's interface object; the calling test is skipped when the target lacks it."""
    if not target.provides(interface):
        pytest.skip(f"target {target.name!r} has no {interface} interface")
    return target.load(interface)


def device_params(devices):
    """``pytest.param`` per device: CUDA carries the ``cuda`` marker and skips cleanly without a GPU."""
    from parity.devices import cuda_available

    cuda_marks = [pytest.mark.cuda, pytest.mark.skipif(not cuda_available(), reason="no CUDA device visible to torch")]
    return [pytest.param(device, marks=cuda_marks if device == "cuda" else (), id=device) for device in devices]


@pytest.fixture(scope="session")
def dataset_factory(target):
    return target_interface(target, "dataset")


@pytest.fixture(scope="session")
def diffusion_loss(target):
    return target_interface(target, "loss")


@pytest.fixture(scope="session")
def trainer_class(target):
    return target_interface(target, "trainer")


# --- a known crash of the target is "crashed (known)", not a failed property (docs/dataset.md, Crashes)


def _target_crashes(error: BaseException):
    from parity.safety.crash import TargetCrashed

    if isinstance(error, TargetCrashed):
        yield error
    for inner in getattr(error, "exceptions", ()):  # several distinct failures: an ExceptionGroup
        yield from _target_crashes(inner)


def pytest_collection_finish(session: pytest.Session) -> None:
    if is_parity_session(session.config):
        _share_cores_once_torch_is_in(session.config)
        freeze_heap()  # what collection built lives for the session: each Trainer run's gc.collect() skips it


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    """The item whose examples a property test counts (parity/suite/outcomes.py)."""
    from parity.suite.outcomes import running

    with running(item):
        return (yield)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    outcome = yield
    report = outcome.get_result()
    target = getattr(item.config, "parity_target", None)
    if target is None:
        return
    try:
        _known_crash(target, call, report)
    finally:
        if selected_target(item.config):  # the property's row for the table that ends the run, its outcome final
            from parity.suite.outcomes import record

            record(item, call, report)


def _known_crash(target, call: pytest.CallInfo, report: pytest.TestReport) -> None:
    if call.when != "call" or call.excinfo is None:
        return
    from parity.safety.crash import is_known_crash

    crashes = list(_target_crashes(call.excinfo.value))
    if crashes and all(is_known_crash(crash, target.known_crashes) for crash in crashes):
        report.outcome = "skipped"
        # Hypothesis attaches the shrunk example to the exception it re-raises, as a note.
        notes = [
            note
            for note in getattr(call.excinfo.value, "__notes__", ())
            if note.startswith(("Falsifying", "Failing test case"))
        ]
        report.wasxfail = "crashed (known): " + "; ".join(str(crash) for crash in crashes) + "".join(
            " | " + " ".join(note.split()) for note in notes
        )
