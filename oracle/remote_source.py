"""Where NVIDIA's remote code comes from: a local folder, or a Hub repository at a revision (docs/diffusion-model.md).

Users do not keep snapshot folders; they name ``nvidia/Nemotron-Labs-Diffusion-8B``, pin a revision in
CI and read it from the Hugging Face cache. A Hub id is resolved here, once, with huggingface_hub's
own ``snapshot_download``, restricted to ``config.json`` and ``*.py`` (never the weights) and so
honouring ``HF_HOME``, ``HF_HUB_CACHE``, ``HF_HUB_OFFLINE`` and the cache. What comes back is the
snapshot folder the code is then loaded from, and the commit it is: running someone's code is a
trust decision, and the run says exactly which code it trusted. Imports nothing but huggingface_hub
and the standard library (the oracle's loader, ``oracle.remote_code``, takes the folder from here).
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path

from huggingface_hub import constants, errors, snapshot_download
from huggingface_hub.errors import (
    HFValidationError,
    LocalEntryNotFoundError,
    OfflineModeIsEnabled,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)
from huggingface_hub.file_download import repo_folder_name
from huggingface_hub.utils import validate_repo_id

#: Names NVIDIA's remote code, as ``--nemotron-remote-code`` does: a local folder holding its
#: ``config.json`` and ``*.py`` (the weights are not needed) or a Hub id ``ORG/NAME[@REVISION]``.
#: Once activated it names the resolved folder, which is what every model builder reads. Here, not
#: in oracle.remote_code, so that a process can ask whether anything is named without importing a model.
REMOTE_CODE_ENV = "PARITY_NEMOTRON_REMOTE_CODE"

#: The only files fetched from a Hub repository: the config (with its ``auto_map``) and the code.
HUB_FILES = ("config.json", "*.py")
#: A git object id: a revision pins the code only when it is a commit's (a branch or a tag can be moved), and the
#: cache names a small file's blob by the blob's (a large one's by its sha256).
_GIT_ID = re.compile(r"[0-9a-f]{40}")
#: A cached snapshot that lacks files its cached listing names (huggingface_hub 1.x has no such check).
_INCOMPLETE = getattr(errors, "IncompleteSnapshotError", ())


class RemoteSourceError(ValueError):
    """The named remote code cannot be found or is not allowed; one line saying why and what to do."""


@dataclass(frozen=True)
class RemoteCodeSource:
    """What the oracle's remote code is: the folder it is loaded from and, for a Hub id, the commit.

    ``files`` holds ``(name, sha256)`` of every file the code is made of, filled in by the loader once
    it knows which files those are (``oracle.remote_code.activate_remote_code``).
    """

    named: str
    folder: Path
    repo_id: str | None = None
    revision: str | None = None  # as asked; None: the repository's default branch
    commit: str | None = None
    files: tuple[tuple[str, str], ...] = ()
    #: What the loader changed at its boundary for the installed transformers (``oracle.remote_code``).
    shims: tuple[str, ...] = ()

    @property
    def pinned(self) -> bool:
        """A local folder is what the user has; a Hub id is pinned only by a commit hash."""
        return self.repo_id is None or bool(self.revision and _GIT_ID.fullmatch(self.revision))

    def unpinned_warning(self) -> str | None:
        if self.pinned:
            return None
        asked = f"revision {self.revision!r}" if self.revision else "no revision"
        return (
            f"{self.named} names {asked}, which can move: running the code of commit {self.commit}; "
            f"pin it as {self.repo_id}@{self.commit} (and pass --require-pinned-revision in CI)"
        )

    def describe(self) -> list[str]:
        """The oracle in words, one file per line: what a report or a test header prints."""
        if self.repo_id is None:
            head = f"oracle model: NVIDIA remote code from the folder {self.folder}"
        else:
            pin = "pinned" if self.pinned else f"NOT pinned: resolved from {self.revision or 'the default branch'}"
            head = f"oracle model: NVIDIA remote code {self.repo_id} at commit {self.commit} ({pin}; {self.folder})"
        return [head, *(f"  sha256 {digest}  {name}" for name, digest in self.files), *(f"  {shim}" for shim in self.shims)]


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def resolve_remote_code(named: str | os.PathLike, require_pinned: bool = False) -> RemoteCodeSource:
    """The folder ``named`` is, or the snapshot of the Hub repository ``ORG/NAME[@REVISION]`` it names.

    An existing folder wins over a Hub id of the same spelling, as in transformers. A Hub id is
    refused before anything is fetched when ``require_pinned`` and its revision is not a commit hash.
    Raises ``RemoteSourceError`` with one line: offline with nothing cached, an unknown revision or
    repository, a string that is neither a folder nor a Hub id.
    """
    named = str(named)
    if Path(named).exists():
        return RemoteCodeSource(named, Path(named).resolve())
    repo_id, _, revision = named.partition("@")
    if not _is_hub_id(repo_id):
        raise RemoteSourceError(
            f"the remote code {named!r} is neither an existing folder nor a Hub repository id (ORG/NAME[@REVISION])"
        )
    if require_pinned and not _GIT_ID.fullmatch(revision):
        raise RemoteSourceError(
            f"{named} is not pinned and --require-pinned-revision is set: name a commit, {repo_id}@<40-hex commit hash>"
        )
    folder = Path(_snapshot(repo_id, revision or None, named))
    check_snapshot(folder)
    return RemoteCodeSource(named, folder, repo_id, revision or None, folder.name)


def check_snapshot(folder: Path) -> None:
    """The snapshot as huggingface_hub lays it out, or a ``RemoteSourceError`` before any of its code is imported:
    each file a link into its repository's ``blobs``, and each blob named by a git blob id holding what that id
    names (the code files; weights are named by their sha256 and not read). A cache folder is passed around (a
    CI cache, a copied ``HF_HOME``): a link out of it, or a blob edited since it was fetched, would run code the
    named commit does not hold (docs/security.md, Remote code)."""
    blobs = (folder.parent.parent / "blobs").resolve()
    for path in sorted(folder.rglob("*")):
        if not path.is_symlink():  # a copy, where the file system has no links: nothing to follow
            continue
        where = path.resolve()
        if not where.is_relative_to(blobs):
            raise RemoteSourceError(f"{path} links to {where}, outside the cache's blobs {blobs}: not loaded")
        if _GIT_ID.fullmatch(where.name) and git_blob_id(where) != where.name:
            raise RemoteSourceError(
                f"{path}: its blob {where.name} no longer holds what that id names (edited since it was fetched); "
                f"not loaded: delete {folder.parent.parent} and fetch the code again"
            )


def git_blob_id(path: Path) -> str:
    """The id git (and the Hub cache, which names a small file's blob by it) gives ``path``'s content."""
    data = path.read_bytes()
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _is_hub_id(repo_id: str) -> bool:
    """ORG/NAME as the Hub spells it; a bare NAME is refused, as it is more likely a folder that is not there."""
    try:
        validate_repo_id(repo_id)
    except HFValidationError:
        return False
    return repo_id.count("/") == 1


def _snapshot(repo_id: str, revision: str | None, named: str) -> str:
    try:
        return snapshot_download(repo_id, revision=revision, allow_patterns=list(HUB_FILES))
    except RevisionNotFoundError:
        raise RemoteSourceError(f"{repo_id} has no revision {revision!r} on the Hub") from None
    except RepositoryNotFoundError:
        raise RemoteSourceError(
            f"{repo_id} is not a Hub repository this machine may read (missing, private or gated: log in with `hf auth login`)"
        ) from None
    except LocalEntryNotFoundError as error:
        raise RemoteSourceError(_not_cached(repo_id, revision, named, error)) from None
    except OfflineModeIsEnabled as error:
        # huggingface_hub 1.x (transformers 5.5 to 5.14 pin it) asks the Hub for a listing even offline: the
        # cached snapshot of the revision is what an offline 2.x run returns.
        if (cached := _cached_snapshot(repo_id, revision)) is not None:
            return str(cached)
        raise RemoteSourceError(_not_cached(repo_id, revision, named, LocalEntryNotFoundError(str(error)))) from None
    except OSError as error:  # the Hub answered with another error
        raise RemoteSourceError(f"cannot fetch {named} ({type(error).__name__}: {first_line(error)})") from None


def _cached_snapshot(repo_id: str, revision: str | None) -> Path | None:
    """The cache's snapshot folder of ``revision`` (a commit, or a branch or tag its ``refs`` name), or None."""
    root = Path(constants.HF_HUB_CACHE) / repo_folder_name(repo_id=repo_id, repo_type="model")
    commit = revision if revision and _GIT_ID.fullmatch(revision) else None
    if commit is None:
        ref = root / "refs" / (revision or "main")
        commit = ref.read_text().strip() if ref.is_file() else None
    folder = root / "snapshots" / commit if commit else None
    return folder if folder is not None and folder.is_dir() else None


def _not_cached(repo_id: str, revision: str | None, named: str, error: LocalEntryNotFoundError) -> str:
    if isinstance(error, _INCOMPLETE):
        return f"{named}: {first_line(error)}"
    why = "HF_HUB_OFFLINE is set" if constants.HF_HUB_OFFLINE else "the Hub could not be reached"
    cache = Path(constants.HF_HUB_CACHE)
    refs = cache / repo_folder_name(repo_id=repo_id, repo_type="model") / "refs"
    cached = sorted(str(ref.relative_to(refs)) for ref in refs.rglob("*") if ref.is_file()) if refs.is_dir() else []
    if cached:
        return (
            f"{repo_id} is in the cache {cache}, but not at revision {revision or 'main'!r} ({why}); "
            f"cached: {', '.join(cached)}"
        )
    return (
        f"{named} is not in the Hugging Face cache {cache} and {why}; fetch its code once online "
        f"(`hf download {repo_id}{f' --revision {revision}' if revision else ''} --include config.json --include '*.py'`) "
        "or set HF_HOME to the cache that holds it"
    )


def first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
