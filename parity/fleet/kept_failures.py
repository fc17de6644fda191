"""The failing examples a pytest run keeps for ``python -m parity repro --from-last-run``, as JSON data
(docs/security.md, Kept failures; docs/dataset.md, Reproducers).

The suite keeps each property's last failing arguments in the run's cache folder
(``.pytest_cache/d/parity-failures/TARGET/PROPERTY.json``), overwritten at each failing call, so the shrunk
example Hypothesis replays last is what stays. A cache folder is what people pass around (a CI job uploads it,
a maintainer downloads a contributor's), so reading one trusts nothing in it: a file is read only when it is a
plain file inside the folder named, of at most :data:`MAX_BYTES`, parses as JSON of this :data:`SCHEMA`, names
this target and one of its properties, and holds that property's arguments as the case types of
:mod:`parity.fleet.case_json`, inside their declared space. Any other file is refused with one line naming it and
what is wrong, and the honest files beside it are still read. A pickle is never read: it would run its own code.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from parity.fleet.case_json import CaseDataError, decode, encode
from parity.fleet.repro_files import slug
from parity.safety.usage import write_atomically
from parity.targets import Target

#: Where a pytest run keeps them, inside its cache folder (``.pytest_cache``).
FAILURES = "parity-failures"
#: The format of a kept file; another is refused, not guessed at.
SCHEMA = "parity-failure/1"
_KEYS = ("schema", "target", "property", "arguments")
#: A kept example is a few kilobytes (its documents as short arrays); a larger file is refused unread.
MAX_BYTES = 4 * 2**20
#: What an older harness kept; named and refused, never loaded.
PICKLE = ".pickle"


def _folder(root: Path, target: str) -> Path:
    return root / slug(target.replace(":", "_"))


def remember_failure(config, target: Target, prop, arguments: dict) -> None:
    """Keep ``arguments`` (a failing example of ``prop`` on ``target``) in the run's cache folder. Nothing is kept
    where the cache plugin is off, nor an example whose values are not case types (the run's report stands)."""
    cache = getattr(config, "cache", None)
    if cache is None:
        return
    try:
        data = {"schema": SCHEMA, "target": target.name, "property": prop.name,
                "arguments": {name: encode(value) for name, value in arguments.items()}}
    except TypeError:
        return
    path = _folder(Path(cache.mkdir(FAILURES)), target.name) / f"{slug(prop.name)}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, json.dumps(data, indent=1))


def remembered_failures(cache_dir: Path, target: Target) -> tuple[dict[str, dict], list[str]]:
    """(property -> the failing arguments a pytest run kept for ``target`` under ``cache_dir``, one line per
    file refused: the file and what is wrong)."""
    from parity.table.rows import PROPERTIES

    root = cache_dir.resolve()
    folder = _folder(cache_dir / "d" / FAILURES, target.name)
    if not folder.is_dir():
        return {}, []
    if not folder.resolve().is_relative_to(root):
        return {}, [f"{folder}: a link to {folder.resolve()}, outside the cache folder {cache_dir}; not read"]
    properties = {f"{slug(prop.name)}.json": prop for prop in PROPERTIES}
    kept, refused = {}, []
    for path in sorted(folder.iterdir()):
        if path.name.startswith(".") and path.name.endswith(".tmp"):  # a write in progress (write_atomically)
            continue
        try:
            if path.suffix == PICKLE:
                raise CaseDataError("a pickle (an older harness kept these): never loaded, as loading one runs its code; "
                                    "delete it and run pytest again")
            if path.name not in properties:
                raise CaseDataError(f"names no property of this harness (a kept file is PROPERTY.json, e.g. "
                                    f"{next(iter(properties))})")
            prop = properties[path.name]
            kept[prop.name] = _arguments(_read(path, root), target, prop)
        except CaseDataError as error:
            refused.append(f"{path}: {error}")
    return kept, refused


def _read(path: Path, root: Path) -> dict:
    """The file's JSON, after the checks that need no reading: a plain file, inside the cache folder, small."""
    found = path.lstat()
    if stat.S_ISLNK(found.st_mode):
        where = path.resolve()
        outside = "" if where.is_relative_to(root) else ", outside the cache folder"
        raise CaseDataError(f"a link to {where}{outside}; a kept example is a plain file, not followed")
    if not stat.S_ISREG(found.st_mode):
        raise CaseDataError("not a plain file; not read")
    if found.st_size > MAX_BYTES:
        raise CaseDataError(f"{found.st_size} bytes, over the {MAX_BYTES // 2**20} MiB a kept example may have; not read")
    descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)  # swapped for a link or a pipe since: no wait
    with os.fdopen(descriptor, "rb") as stream:
        raw = stream.read(MAX_BYTES + 1)  # the file may have grown since
    if len(raw) > MAX_BYTES:
        raise CaseDataError(f"over the {MAX_BYTES // 2**20} MiB a kept example may have; not read")
    try:
        data = json.loads(raw.decode("utf-8"), parse_constant=_no_constant)
    except UnicodeDecodeError as error:
        raise CaseDataError(f"not UTF-8 text (byte {error.start}): not a kept example") from None
    except json.JSONDecodeError as error:
        raise CaseDataError(f"does not parse as JSON ({error.msg}: line {error.lineno} column {error.colno})") from None
    if not isinstance(data, dict):
        raise CaseDataError(f"holds a JSON {type(data).__name__}, not an object with {', '.join(_KEYS)}")
    return data


def _no_constant(name: str):
    raise CaseDataError(f"holds {name}, which is not a number JSON has")


def _arguments(data: dict, target: Target, prop) -> dict:
    """The property's arguments from a kept file's JSON, each checked against the file and the property."""
    if data.get("schema") != SCHEMA:
        raise CaseDataError(f"is of schema {data.get('schema')!r}; this harness reads {SCHEMA!r}")
    if set(data) != set(_KEYS):
        raise CaseDataError(f"has the keys {', '.join(sorted(data))}; a kept example has {', '.join(_KEYS)}")
    if data["target"] != target.name or data["property"] != prop.name:
        raise CaseDataError(f"holds {data['property']!r} on {data['target']!r}, not {prop.name} on {target.name} "
                            "as its place says")
    arguments, expected = data["arguments"], list(prop.arguments())
    if not isinstance(arguments, dict) or sorted(arguments) != sorted(expected):
        named = ", ".join(sorted(arguments)) if isinstance(arguments, dict) else type(arguments).__name__
        raise CaseDataError(f"arguments: {named}; {prop.name} takes {', '.join(expected)}")
    return {name: decode(value, name) for name, value in arguments.items()}
