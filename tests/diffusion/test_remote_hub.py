"""NVIDIA's code named by a Hub id, read from the Hugging Face cache offline (docs/diffusion-model.md).

Each test lays out a cache the way huggingface_hub stores one (``models--ORG--NAME/refs/main`` holding
a commit, ``snapshots/<commit>/FILE`` linking to ``blobs/<git blob hash>``) with the stand-in's
files, points huggingface_hub at it, turns it offline and forbids every connection: a test that
reached the network would fail, not hang.
"""

from __future__ import annotations

import hashlib
import json
import socket
import types
from pathlib import Path

import pytest
from huggingface_hub import constants

from oracle.remote_code import REMOTE_CODE_ENV, activate_remote_code, oracle_model_factory
from parity import pytest_plugin

STANDIN = Path(__file__).resolve().parent.parent / "assets" / "nemotron_standin"
REPO = "org/standin"
COMMIT = "c0ffee" + "0" * 34
STANDIN_FILES = sorted(path.name for path in STANDIN.iterdir() if path.suffix in (".py", ".json"))


def lay_out_cache(cache: Path, files: dict[str, bytes], repo: str = REPO, commit: str = COMMIT, ref: str = "main") -> Path:
    """``files`` as the snapshot of ``repo`` at ``commit``, with ``ref`` pointing at it; the snapshot folder."""
    repo_folder = cache / f"models--{repo.replace('/', '--')}"
    snapshot = repo_folder / "snapshots" / commit
    snapshot.mkdir(parents=True)
    (repo_folder / "blobs").mkdir()
    for name, data in files.items():
        blob = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()  # git's blob id, as the Hub serves it
        (repo_folder / "blobs" / blob).write_bytes(data)
        (snapshot / name).symlink_to(Path("../../blobs") / blob)
    (repo_folder / "refs").mkdir()
    (repo_folder / "refs" / ref).write_text(commit)
    return snapshot


def standin_files() -> dict[str, bytes]:
    return {name: (STANDIN / name).read_bytes() for name in STANDIN_FILES}


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    """An empty Hugging Face cache, offline, no connection possible; the remote-code variable unset."""

    def no_network(*args, **kwargs):
        raise AssertionError("network access attempted")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setenv(REMOTE_CODE_ENV, "")  # recorded, so the folder activate_remote_code names there is undone
    return tmp_path / "hub"


def test_a_hub_id_runs_the_cached_snapshot_and_names_its_commit_and_files(cache):
    snapshot = lay_out_cache(cache, standin_files())
    source = activate_remote_code(REPO)
    assert source.folder == snapshot and source.commit == COMMIT and source.revision is None
    assert dict(source.files) == {name: hashlib.sha256((STANDIN / name).read_bytes()).hexdigest() for name in STANDIN_FILES}
    header = source.describe()
    assert header[0].startswith(f"oracle model: NVIDIA remote code {REPO} at commit {COMMIT} (NOT pinned")
    assert header[1:] == [f"  sha256 {digest}  {name}" for name, digest in source.files] + [f"  {shim}" for shim in source.shims]
    assert f"running the code of commit {COMMIT}; pin it as {REPO}@{COMMIT}" in source.unpinned_warning()
    # every builder of the process now loads that snapshot, by the environment DDP ranks inherit
    model = oracle_model_factory()(0)
    assert COMMIT in type(model).__module__.split(".")[1]


def test_a_commit_pins_the_code(cache):
    lay_out_cache(cache, standin_files())
    source = activate_remote_code(f"{REPO}@{COMMIT}", require_pinned=True)
    assert source.pinned and source.unpinned_warning() is None and source.commit == COMMIT
    assert "(pinned;" in source.describe()[0]


@pytest.mark.parametrize("named", [REPO, f"{REPO}@main"])
def test_an_unpinned_id_is_refused_when_a_pin_is_required(named, cache):
    lay_out_cache(cache, standin_files())
    with pytest.raises(ValueError, match=f"{named} is not pinned and --require-pinned-revision is set"):
        activate_remote_code(named, require_pinned=True)


BAD_SOURCES = {
    "nothing cached": (None, REPO, f"{REPO} is not in the Hugging Face cache .* and HF_HUB_OFFLINE is set; fetch its code once"),
    "unknown revision": (standin_files(), f"{REPO}@v2", f"{REPO} is in the cache .*, but not at revision 'v2' .*; cached: main"),
    "unknown commit": (standin_files(), f"{REPO}@{'f' * 40}", f"but not at revision '{'f' * 40}'"),
    "no remote code": (
        {"config.json": b'{"model_type": "llama"}', "README.md": b"weights only"},
        REPO,
        f"{REPO} at commit {COMMIT} holds no usable remote code: .*auto_map.AutoConfig is None",
    ),
    "a relative import missing": (
        {name: data for name, data in standin_files().items() if name != "modeling_standin_backbone.py"},
        REPO,
        "modeling_nemotron_standin.py imports .modeling_standin_backbone but .*modeling_standin_backbone.py does not exist",
    ),
    "neither folder nor id": (None, "no-such-folder", "is neither an existing folder nor a Hub repository id"),
}


@pytest.mark.parametrize("case", BAD_SOURCES)
def test_bad_remote_code_is_one_line(case, cache):
    files, named, message = BAD_SOURCES[case]
    if files is not None:
        lay_out_cache(cache, files)
    with pytest.raises(ValueError, match=message) as raised:
        activate_remote_code(named)
    assert "\n" not in str(raised.value)


def _writing_marker(marker: Path) -> bytes:
    """The stand-in's modeling module, plus a line that writes ``marker`` when the module is imported."""
    return (STANDIN / "modeling_nemotron_standin.py").read_bytes() + f"\nimport pathlib\npathlib.Path({str(marker)!r}).touch()\n".encode()


def test_a_snapshot_file_linked_out_of_the_cache_is_refused_before_its_code_runs(cache, tmp_path):
    """A cache folder is passed around (docs/security.md, Remote code): a snapshot's file must link into its blobs."""
    snapshot = lay_out_cache(cache, standin_files())
    elsewhere = tmp_path / "elsewhere.py"
    elsewhere.write_bytes(_writing_marker(tmp_path / "marker"))
    (snapshot / "modeling_nemotron_standin.py").unlink()
    (snapshot / "modeling_nemotron_standin.py").symlink_to(elsewhere)
    with pytest.raises(ValueError, match=f"modeling_nemotron_standin.py links to {elsewhere}, outside the cache's blobs"):
        activate_remote_code(f"{REPO}@{COMMIT}", require_pinned=True)
    assert not (tmp_path / "marker").exists()


def test_a_blob_edited_since_it_was_fetched_is_refused_before_its_code_runs(cache, tmp_path):
    snapshot = lay_out_cache(cache, standin_files())
    (snapshot / "modeling_nemotron_standin.py").resolve().write_bytes(_writing_marker(tmp_path / "marker"))
    with pytest.raises(ValueError, match=r"modeling_nemotron_standin.py: its blob [0-9a-f]{40} no longer holds what that "
                                         r"id names \(edited since it was fetched\); not loaded"):
        activate_remote_code(f"{REPO}@{COMMIT}", require_pinned=True)
    assert not (tmp_path / "marker").exists()


def _hub_answers(error_class):
    """What snapshot_download raises when the Hub answers 404 for ``error_class``'s reason."""
    from huggingface_hub import errors

    response = types.SimpleNamespace(status_code=404, headers={}, request=None)
    error = getattr(errors, error_class)("the Hub's own words", response=response)

    def snapshot_download(*args, **kwargs):
        raise error

    return snapshot_download


@pytest.mark.parametrize(
    ("error_class", "message"),
    [
        ("RevisionNotFoundError", f"^{REPO} has no revision 'v2' on the Hub$"),
        ("RepositoryNotFoundError", f"^{REPO} is not a Hub repository this machine may read .*hf auth login"),
        ("HfHubHTTPError", f"^cannot fetch {REPO}@v2 \\(HfHubHTTPError: the Hub's own words\\)$"),
    ],
)
def test_what_the_hub_answers_is_one_line(error_class, message, cache, monkeypatch):
    from oracle import remote_source

    monkeypatch.setattr(remote_source, "snapshot_download", _hub_answers(error_class))
    with pytest.raises(ValueError, match=message):
        activate_remote_code(f"{REPO}@v2")


def test_the_report_refuses_an_uncached_id_in_one_line(cache, capsys):
    from parity.__main__ import main

    assert main(["--only", "diffusion-window", "--nemotron-remote-code", REPO]) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert captured.out == "" and len(lines) == 1 and "is not in the Hugging Face cache" in lines[0]


def test_the_report_names_the_oracle_and_warns_of_an_unpinned_id(cache, capsys):
    from parity.cli.arguments import report_parser
    from parity.cli.report import use_remote_code

    lay_out_cache(cache, standin_files())
    parser = report_parser()
    assert use_remote_code(parser, parser.parse_args(["--nemotron-remote-code", REPO]))
    captured = capsys.readouterr()
    assert captured.out.splitlines()[0].startswith(f"oracle model: NVIDIA remote code {REPO} at commit {COMMIT}")
    assert captured.err.startswith(f"{parser.prog}: warning: {REPO} names no revision, which can move")


def test_the_json_and_markdown_reports_carry_the_oracle_commit_and_hashes(cache, tmp_path, capsys):
    from parity.__main__ import main

    lay_out_cache(cache, standin_files())
    written, markdown = tmp_path / "r.json", tmp_path / "r.md"
    argv = ["--only", "dataset-cache", "--nemotron-remote-code", f"{REPO}@{COMMIT}", "--quiet"]
    assert main([*argv, "--json", str(written), "--markdown", str(markdown)]) == 0
    oracle = json.loads(written.read_text())["options"]["oracle"]
    assert oracle[0].startswith(f"oracle model: NVIDIA remote code {REPO} at commit {COMMIT} (pinned")
    assert len(oracle) > 1 and all(line.startswith(("  sha256 ", "  shim: ")) for line in oracle[1:])  # the shim, if any, too
    assert "\n".join(oracle) in markdown.read_text()


class _Config(types.SimpleNamespace):
    """The parts of a pytest config the remote-code set-up reads: its options and where warnings go."""

    def getoption(self, name):
        return self.options[name]

    def issue_config_time_warning(self, warning, stacklevel):
        self.warnings.append(warning)


def test_the_plugin_names_the_oracle_in_the_header_and_warns_once(cache, monkeypatch):
    lay_out_cache(cache, standin_files())
    options = {"parity_nemotron_remote_code": REPO, "parity_require_pinned_revision": False}
    config = _Config(options=options, warnings=[], parity_target=None)
    config.parity_remote_code = pytest_plugin._activate_remote_code(config)
    assert pytest_plugin.pytest_report_header(config) == config.parity_remote_code.describe()
    (warning,) = config.warnings
    assert isinstance(warning, pytest_plugin.UnpinnedRevisionWarning) and COMMIT in str(warning)
    # an xdist worker runs the folder the controller resolved, and warns nothing
    worker = _Config(options={**options, "parity_require_pinned_revision": True}, warnings=[], workerinput={})
    assert pytest_plugin._activate_remote_code(worker).folder == config.parity_remote_code.folder
    assert worker.warnings == []


def test_the_plugin_refuses_an_unpinned_id_as_a_usage_error(cache):
    lay_out_cache(cache, standin_files())
    config = _Config(options={"parity_nemotron_remote_code": REPO, "parity_require_pinned_revision": True}, warnings=[])
    with pytest.raises(pytest.UsageError, match="is not pinned"):
        pytest_plugin._activate_remote_code(config)

