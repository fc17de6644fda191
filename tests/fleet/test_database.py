"""The example database setting (parity/fleet/database.py, docs/fleet.md): forms, modes, keys, and a real Redis."""

from __future__ import annotations

import zipfile
from dataclasses import replace
from datetime import datetime, timezone

import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st
from hypothesis.database import (
    DirectoryBasedExampleDatabase,
    ExampleDatabase,
    GitHubArtifactDatabase,
    InMemoryExampleDatabase,
    MultiplexedDatabase,
    ReadOnlyDatabase,
)

from parity.fleet import database
from parity.fleet.database import DatabaseSetting, DatabaseSettingError, KeyPrefixedDatabase, database_setting
from parity.targets import get_target
from tests.hostile import marker_pickle

IMPL = get_target("impl")


@pytest.mark.parametrize(
    ("location", "mode", "profile", "expected"),
    [
        ("some/dir", None, "dev", "read-only"),
        ("some/dir", None, "nightly", "read-write"),
        ("redis://127.0.0.1:6379/0", None, "ci", "read-only"),
        ("redis://127.0.0.1:6379/0", "read-write", "ci", "read-write"),
        ("github-artifact://owner/repo/parity-example-db", None, "nightly", "read-only"),
    ],
)
def test_who_writes_follows_the_profile_unless_told(location, mode, profile, expected):
    assert database_setting(location, mode, profile) == DatabaseSetting(location, expected)


def test_no_setting_leaves_every_profile_its_own():
    assert database_setting(None, None, "ci") is None
    assert database_setting("", None, "nightly") is None


@pytest.mark.parametrize(
    ("location", "mode", "names"),
    [
        ("http://host/db", None, "unknown scheme 'http'"),
        ("github-artifact://owner", None, "OWNER/REPO"),
        ("github-artifact://owner/repo/name/extra", None, "OWNER/REPO"),
        ("github-artifact://owner/repo", "read-write", "can only be read"),
        ("some/dir", "write", "read-only, read-write"),
        (None, "read-only", "needs a --parity-database"),
    ],
)
def test_a_bad_setting_is_refused_naming_what_is_allowed(location, mode, names):
    with pytest.raises(DatabaseSettingError, match=names):
        database_setting(location, mode, "dev")


def test_a_github_artifact_is_constructed_read_only():
    """Construction only: reading it needs the network and a token (GITHUB_TOKEN)."""
    setting = database_setting("github-artifact://acme/trainer/parity-example-db", None, "dev")
    shared = database.shared_database(setting.location)
    assert isinstance(shared, GitHubArtifactDatabase)
    assert (shared.owner, shared.repo, shared.artifact_name) == ("acme", "trainer", "parity-example-db")
    assert database.shared_database("github-artifact://acme/trainer").artifact_name == "hypothesis-example-db"
    local = settings.get_profile("default").database
    assert database.example_database(setting, b"p:") == KeyPrefixedDatabase(
        MultiplexedDatabase(local, ReadOnlyDatabase(shared)), b"p:"
    )


def test_prefixed_keys_keep_targets_apart():
    raw = InMemoryExampleDatabase()
    one, other = KeyPrefixedDatabase(raw, b"a:"), KeyPrefixedDatabase(raw, b"b:")
    one.save(b"test", b"x")
    one.save(b"old", b"y")
    one.move(b"old", b"test", b"y")
    assert sorted(one.fetch(b"test")) == [b"x", b"y"] and list(one.fetch(b"old")) == []
    assert list(other.fetch(b"test")) == []
    assert sorted(raw.fetch(b"a:test")) == [b"x", b"y"]
    one.delete(b"test", b"x")
    assert list(one.fetch(b"test")) == [b"y"]


def test_change_events_pass_through_unprefixed():
    raw = InMemoryExampleDatabase()
    seen = []
    prefixed = KeyPrefixedDatabase(raw, b"a:")
    prefixed.add_listener(seen.append)
    raw.save(b"b:elsewhere", b"1")
    prefixed.save(b"key", b"2")
    prefixed.delete(b"key", b"2")
    prefixed.remove_listener(seen.append)
    prefixed.save(b"key", b"3")
    assert seen == [("save", (b"key", b"2")), ("delete", (b"key", b"2"))]


def test_the_key_names_the_target_and_its_version():
    megatron = replace(IMPL, name="megatron-core", requires="megatron-core")
    prefixes = {database.target_prefix(t) for t in (IMPL, get_target("known-bug:cache-alias"), megatron)}
    assert len(prefixes) == 3
    assert database.target_prefix(IMPL).startswith(b"parity:impl@parity-harness ")
    assert b"megatron-core " in database.target_prefix(megatron)


def test_read_only_writes_only_the_local_finds(tmp_path):
    shared = DirectoryBasedExampleDatabase(tmp_path)
    shared.save(b"parity-test:seen", b"fleet")
    used = database.example_database(DatabaseSetting(str(tmp_path), "read-only"), b"parity-test:")
    used.save(b"seen", b"mine")  # into Hypothesis's local directory
    try:
        assert sorted(used.fetch(b"seen")) == [b"fleet", b"mine"]
        assert list(shared.fetch(b"parity-test:seen")) == [b"fleet"]
    finally:
        used.delete(b"seen", b"mine")


@pytest.fixture
def scratch_profile():
    """A profile of its own, loaded for the test; the session's profile is loaded back after."""
    before = settings.get_current_profile_name()
    settings.register_profile("parity-database-test", settings(derandomize=True, database=None))
    yield "parity-database-test"
    settings.load_profile(before)


def test_the_setting_wins_over_a_profile_without_database(scratch_profile, tmp_path):
    setting = DatabaseSetting(str(tmp_path), "read-write")
    database.load_into_profile(scratch_profile, setting, IMPL, replay=False)
    assert settings.default.database == database.example_database(setting, database.target_prefix(IMPL))
    assert not settings.default.derandomize  # Hypothesis allows no database beside derandomize=True


def test_replay_runs_the_saved_examples_alone(scratch_profile, tmp_path):
    database.load_into_profile(scratch_profile, DatabaseSetting(str(tmp_path), "read-only"), IMPL, replay=True)
    assert tuple(settings.default.phases) == (Phase.reuse,)


@pytest.mark.needs("redis-server")
def test_a_real_redis_server_holds_the_examples(redis_url):
    setting = database_setting(redis_url, "read-write", "dev")
    used = database.example_database(setting, database.target_prefix(IMPL))
    assert used is database.example_database(setting, database.target_prefix(IMPL))  # one client per process
    used.save(b"key", b"value")
    reader = database.example_database(replace(setting, mode="read-only"), database.target_prefix(IMPL))
    assert list(reader.fetch(b"key")) == [b"value"]
    reader.save(b"key", b"not shared")  # a pull request's own find stays local
    try:
        assert list(used.fetch(b"key")) == [b"value"]
    finally:
        reader.delete(b"key", b"not shared")


# --- what the database holds is bytes, never an object (docs/security.md, The example database) ----------------------


FAILS = {"now": True}


def _a_property(n):
    assert not (FAILS["now"] and n > 3)


class _Recording(ExampleDatabase):
    """Another database, with what was fetched from it kept: the hostile values did reach Hypothesis."""

    def __init__(self, db: ExampleDatabase) -> None:
        super().__init__()
        self.db, self.fetched = db, []

    def fetch(self, key: bytes):
        for value in self.db.fetch(key):
            self.fetched.append(value)
            yield value

    def save(self, key: bytes, value: bytes) -> None:
        self.db.save(key, value)

    def delete(self, key: bytes, value: bytes) -> None:
        self.db.delete(key, value)


def _run(db: ExampleDatabase, fails: bool) -> None:
    FAILS["now"] = fails
    settings(database=KeyPrefixedDatabase(db, database.target_prefix(IMPL)), max_examples=20, derandomize=False,
             deadline=None)(given(st.integers(0, 100))(_a_property))()  # keyed by _a_property, run after run


@pytest.fixture
def unseeded(monkeypatch):
    """The run's ``--hypothesis-seed`` set aside while the test runs Hypothesis itself: a forced seed switches the
    example database off (neither saved to nor read from), and this test is about what the database holds. Its own
    runs state the rest (database, derandomize, examples) in ``_run``."""
    import hypothesis.core

    monkeypatch.setattr(hypothesis.core, "global_force_seed", None)


def test_a_pickle_planted_in_the_shared_database_or_its_artifact_is_only_ever_choice_bytes(tmp_path, unseeded):
    """Hypothesis keeps a counterexample as the bytes of its choice sequence and replays it through the property's own
    strategies: a pickle planted in a shared directory, or in the GitHub artifact made of one, is fetched as bytes that
    parse as no choices, and runs nothing; a member named out of the artifact's folder is read in memory, never written."""
    directory = tmp_path / "db"
    with pytest.raises(AssertionError):
        _run(DirectoryBasedExampleDatabase(directory), fails=True)  # the counterexample, saved
    payload = marker_pickle(tmp_path / "marker")
    entries = [path for path in directory.rglob("*") if path.is_file()]
    assert entries
    for path in entries:
        path.write_bytes(payload)
    (tmp_path / "outside").write_bytes(payload)
    (entries[0].parent / "linked").symlink_to(tmp_path / "outside")
    shared = _Recording(DirectoryBasedExampleDatabase(directory))
    _run(shared, fails=False)
    assert payload in shared.fetched and not (tmp_path / "marker").exists()

    artifacts = tmp_path / "artifacts"
    artifacts.mkdir()
    stamp = datetime.now(timezone.utc).isoformat().replace(":", "_")  # a fresh download, as Hypothesis names it
    with zipfile.ZipFile(artifacts / f"{stamp}.zip", "w") as archive:
        for path in entries:
            archive.writestr(str(path.relative_to(directory)), payload)
        archive.writestr("../../escaped", payload)
    artifact = _Recording(ReadOnlyDatabase(GitHubArtifactDatabase("owner", "repo", path=artifacts)))
    _run(artifact, fails=False)
    assert payload in artifact.fetched and not (tmp_path / "marker").exists()
    assert not (tmp_path / "escaped").exists() and not (artifacts.parent.parent / "escaped").exists()
