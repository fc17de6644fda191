"""The example database of every profile, from one setting (docs/fleet.md).

``--parity-database`` (or ``$PARITY_DATABASE``) names where Hypothesis keeps the counterexamples it
finds, so that the next run of any checkout pointed at the same place replays them first:

- a directory (``PATH``), like Hypothesis's own default ``.hypothesis/examples``, but shared;
- ``redis://HOST:PORT/DB`` (or ``rediss://``, ``unix://``): a Redis server a fleet of machines shares,
  through ``hypothesis.extra.redis.RedisExampleDatabase`` (the ``fleet`` extra; docs/install.md);
- ``github-artifact://OWNER/REPO[/ARTIFACT]``: the artifact the fuzz workflow uploads, through
  Hypothesis's ``GitHubArtifactDatabase``, which can only be read.

Who writes follows Hypothesis's convention: the fleet (the ``nightly`` profile, ``python -m parity
fuzz``) reads and writes the shared database; every other run (a pull request, a developer) reads it
read-only, multiplexed with the local ``.hypothesis/examples`` that keeps its own finds
(``--parity-database-mode`` says otherwise). Every key is prefixed with the target's name and
version, so a counterexample of one target never replays, as noise, on another.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, entry_points, version
from pathlib import Path
from urllib.parse import urlsplit

from hypothesis import settings
from hypothesis.database import (
    DirectoryBasedExampleDatabase,
    ExampleDatabase,
    GitHubArtifactDatabase,
    MultiplexedDatabase,
    ReadOnlyDatabase,
)

from parity.safety.releases import install_command
from parity.targets import ENTRY_POINT_GROUP, Target

DATABASE_ENV = "PARITY_DATABASE"
MODE_ENV = "PARITY_DATABASE_MODE"
MODES = ("read-only", "read-write")
#: The profile of the fleet, which writes the shared database unless told otherwise.
WRITING_PROFILES = ("nightly",)
REDIS_SCHEMES = ("redis", "rediss", "unix")
ARTIFACT_SCHEME = "github-artifact"
FORMS = "a directory, redis://HOST:PORT/DB or github-artifact://OWNER/REPO[/ARTIFACT]"


class DatabaseSettingError(ValueError):
    """A database setting that names nothing this harness can open: a usage error, before any work."""


@dataclass(frozen=True)
class DatabaseSetting:
    """Where the shared database is, and whether this run writes it."""

    location: str
    mode: str

    def describe(self) -> str:
        beside = "" if self.mode == "read-write" else ", beside the local .hypothesis/examples"
        return f"{self.location} ({self.mode}{beside})"


def scheme(location: str) -> str:
    """``redis``, ``github-artifact``, ...; empty for a directory."""
    return urlsplit(location).scheme if "://" in location else ""


def database_setting(location: str | None, mode: str | None, profile: str) -> DatabaseSetting | None:
    """The setting from its two values, checked; None when no database is named (each profile keeps
    its own, as without this harness)."""
    if mode is not None and mode not in MODES:
        raise DatabaseSettingError(f"--parity-database-mode must be one of {', '.join(MODES)}; got {mode!r}")
    if not location:
        if mode is not None:
            raise DatabaseSettingError(f"--parity-database-mode {mode} needs a --parity-database: {FORMS}")
        return None
    kind = scheme(location)
    if kind not in ("", *REDIS_SCHEMES, ARTIFACT_SCHEME):
        raise DatabaseSettingError(f"--parity-database {location!r}: unknown scheme {kind!r}; expected {FORMS}")
    if kind == ARTIFACT_SCHEME:
        parts = urlsplit(location)
        if not parts.netloc or not parts.path.strip("/") or parts.path.strip("/").count("/") > 1:
            raise DatabaseSettingError(f"--parity-database {location!r}: expected github-artifact://OWNER/REPO[/ARTIFACT]")
        if mode == "read-write":
            raise DatabaseSettingError(f"--parity-database {location}: a GitHub artifact can only be read (read-only)")
    writes = profile in WRITING_PROFILES and kind != ARTIFACT_SCHEME
    return DatabaseSetting(location, mode or ("read-write" if writes else "read-only"))


@functools.cache
def shared_database(location: str) -> ExampleDatabase:
    """The database ``location`` names, opened once per process: HypoFuzz fuzzes only the tests whose
    database equals the profile's, and a Redis client equals only itself."""
    kind = scheme(location)
    if kind in REDIS_SCHEMES:
        try:
            import redis
            from hypothesis.extra.redis import RedisExampleDatabase
        except ImportError:
            raise DatabaseSettingError(
                f"--parity-database {location}: a Redis database needs redis-py: {install_command('redis')}"
            ) from None
        return RedisExampleDatabase(redis.Redis.from_url(location))
    if kind == ARTIFACT_SCHEME:
        parts = urlsplit(location)
        repo, _, artifact = parts.path.strip("/").partition("/")
        return GitHubArtifactDatabase(parts.netloc, repo, **({"artifact_name": artifact} if artifact else {}))
    return DirectoryBasedExampleDatabase(Path(location))


class KeyPrefixedDatabase(ExampleDatabase):
    """Another database with every key under one prefix (docs/fleet.md, Keys).

    Hypothesis keys a test's examples by the test alone (its source, signature and pytest node id). The
    property suite is one set of tests run against many targets, so without a prefix a counterexample
    found on one target would be replayed on every other."""

    def __init__(self, db: ExampleDatabase, prefix: bytes) -> None:
        super().__init__()
        self.db, self.prefix = db, prefix

    def __repr__(self) -> str:
        return f"KeyPrefixedDatabase({self.db!r}, prefix={self.prefix!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, KeyPrefixedDatabase) and (self.db, self.prefix) == (other.db, other.prefix)

    def fetch(self, key: bytes):
        yield from self.db.fetch(self.prefix + key)

    def save(self, key: bytes, value: bytes) -> None:
        self.db.save(self.prefix + key, value)

    def delete(self, key: bytes, value: bytes) -> None:
        self.db.delete(self.prefix + key, value)

    def move(self, src: bytes, dest: bytes, value: bytes) -> None:
        self.db.move(self.prefix + src, self.prefix + dest, value)

    # Change events pass through with the prefix taken off (HypoFuzz's workers share finds through them).
    def _start_listening(self) -> None:
        self.db.add_listener(self._relay)

    def _stop_listening(self) -> None:
        self.db.remove_listener(self._relay)

    def _relay(self, event) -> None:
        kind, (key, value) = event
        if key.startswith(self.prefix):
            self._broadcast_change((kind, (key[len(self.prefix) :], value)))


def target_version(target: Target) -> str:
    """The version a target's examples are kept under: the package it needs (``requires``), else the
    distribution that registers it (an entry point), else this harness's."""
    if target.requires is not None:
        return f"{target.requires} {target.version or 'not installed'}"
    for entry_point in entry_points(group=ENTRY_POINT_GROUP, name=target.name):
        if entry_point.dist is not None:
            return f"{entry_point.dist.name} {entry_point.dist.version}"
    try:
        return f"parity-harness {version('parity-harness')}"
    except PackageNotFoundError:  # run from a source tree that is not installed
        return "parity-harness (not installed)"


def target_prefix(target: Target) -> bytes:
    return f"parity:{target.name}@{target_version(target)}:".encode()


@functools.cache
def example_database(setting: DatabaseSetting, prefix: bytes) -> ExampleDatabase:
    """The database a run uses, every key under ``prefix``: the shared one read and written, or read
    only beside Hypothesis's default directory, which keeps the run's own finds."""
    shared = shared_database(setting.location)
    if setting.mode == "read-write":
        return KeyPrefixedDatabase(shared, prefix)
    local = settings.get_profile("default").database  # .hypothesis/examples, created when first written
    return KeyPrefixedDatabase(MultiplexedDatabase(local, ReadOnlyDatabase(shared)), prefix)


def load_into_profile(profile: str, setting: DatabaseSetting | None, target: Target, replay: bool) -> None:
    """Re-register ``profile`` with the setting's database and load it (docs/fleet.md, Which wins).

    The database wins over the profile's own, the ``ci`` profile's ``database=None`` included; since
    Hypothesis refuses a database beside ``derandomize=True``, such a run draws fresh examples after
    replaying the saved ones. ``replay``: the saved examples alone (Hypothesis's reuse phase)."""
    from hypothesis import Phase

    changes = {}
    if setting is not None:
        changes.update(derandomize=False, database=example_database(setting, target_prefix(target)))
    if replay:
        changes.update(phases=(Phase.reuse,))
    if changes:
        settings.register_profile(profile, settings(settings.get_profile(profile), **changes))
        settings.load_profile(profile)
