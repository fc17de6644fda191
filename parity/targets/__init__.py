"""The registry of targets: the implementations the properties run against (docs/design.md, Targets and interfaces).

A target bundles up to three interfaces, each named by an import path and loaded only when a
property asks for it, so ``--parity-target known-bug:local-mean`` never imports the dataset code and
listing targets never imports transformers. A property whose interface a target lacks is skipped.

Installed packages add targets through the ``parity.targets`` entry-point group; each entry point
loads to a :class:`Target`::

    [project.entry-points."parity.targets"]
    my-dataset = "my_pkg.parity_adapter:TARGET"

Entry points are loaded only when their target is selected by name or every target is listed, so a
slow or broken adapter never slows or breaks a run that does not ask for it. Built-in targets that
need an optional package (``requires``) exist only when it is installed and, like installed
targets, appear in the report and bench only when selected.
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib.metadata import entry_points

from parity.safety.crash import ConfigDeclined  # noqa: F401 - a target raises parity.targets.ConfigDeclined
from parity.safety.releases import install_command, supported
from parity.targets.catalogue import (
    BUILTIN_TARGETS,
    CAUSAL_TARGETS,
    OPTIONAL_TARGETS,
    PLANTED_TARGETS,
    TRL_TARGETS,
)
from parity.targets.interfaces import (  # noqa: F401 - the public names a target's adapter imports from here
    DatasetFactory,
    DiffusionLoss,
    GPTDatasetLike,
    Interface,
    Target,
    load_attribute,
)

ENTRY_POINT_GROUP = "parity.targets"


class UnknownTargetError(LookupError):
    """A target name that neither the built-ins nor an installed entry point defines."""


class DuplicateTargetError(UnknownTargetError):
    """Two installed packages register the same target name: a usage error naming both, never a silent choice."""


class TargetLoadError(UnknownTargetError):
    """An installed entry point that could not be loaded as a target (raised only when selected).

    An ``UnknownTargetError`` too: the target cannot be provided, and every caller that reports an
    unknown name as a usage error (``pytest --parity-target``, ``python -m parity``) reports this one the
    same way, with the adapter's own import error."""


def default_targets() -> dict[str, Target]:
    """The targets every report and bench shows: the built-ins that need nothing optional."""
    return {target.name: target for target in BUILTIN_TARGETS}


def builtin_targets() -> dict[str, Target]:
    """The default targets, the planted ones, the causal-LM trainers, and the optional built-ins whose package is
    installed."""
    targets = default_targets()
    targets.update({t.name: t for t in PLANTED_TARGETS})
    targets.update({t.name: t for t in CAUSAL_TARGETS})
    targets.update({t.name: t for t in (*OPTIONAL_TARGETS, *TRL_TARGETS) if t.version is not None})
    return targets


def _load_entry_point(entry_point, taken: Mapping[str, Target]) -> Target:
    try:
        target = entry_point.load()
    except Exception as error:  # a broken adapter says so, and only when it is asked for
        raise TargetLoadError(
            f"entry point {entry_point.name!r} in group {ENTRY_POINT_GROUP!r} failed to load: "
            f"{type(error).__name__}: {error}"
        ) from error
    if not isinstance(target, Target):
        raise TypeError(
            f"entry point {entry_point.name!r} in group {ENTRY_POINT_GROUP!r} must load a "
            f"parity.targets.Target, got {type(target).__name__}"
        )
    if target.name in taken:
        raise ValueError(f"entry point {entry_point.name!r} redefines the target {target.name!r}")
    return target


def all_targets() -> dict[str, Target]:
    """Built-in targets plus those registered by installed packages (a built-in name cannot be
    replaced). Loads every entry point: for listing; a run selects one with :func:`get_target`."""
    targets = builtin_targets()
    for entry_point in entry_points(group=ENTRY_POINT_GROUP):
        target = _load_entry_point(entry_point, targets)
        targets[target.name] = target
    return targets


def listed_targets() -> list[Target | str]:
    """Every target for ``python -m parity targets``: a broken entry point, or an optional built-in whose package is
    absent, is a line saying why."""
    listed: list[Target | str] = []
    builtins = builtin_targets()
    listed += builtins.values()
    listed += [f"{target.name:28} absent: {needs(target)}" for target in absent_targets()]
    for entry_point in entry_points(group=ENTRY_POINT_GROUP):
        try:
            listed.append(_load_entry_point(entry_point, builtins))
        except (TargetLoadError, TypeError, ValueError) as error:
            listed.append(f"{entry_point.name:28} NOT LOADED: {error}")
    return listed


def get_target(name: str) -> Target:
    """The target called ``name``: a built-in, else the installed entry point of that name (the
    only one loaded); ``UnknownTargetError`` listing the known names otherwise."""
    builtins = builtin_targets()
    if name in builtins:
        return builtins[name]
    installed = list(entry_points(group=ENTRY_POINT_GROUP))
    matching = [entry_point for entry_point in installed if entry_point.name == name]
    if len(matching) > 1:  # which one loads would depend on the order the packages are found in
        registered = " and ".join(f"{getattr(e.dist, 'name', '?')} ({e.value})" for e in matching)
        raise DuplicateTargetError(f"target {name!r} is registered by more than one package: {registered}; "
                                   f"uninstall one, or rename its {ENTRY_POINT_GROUP!r} entry point")
    if matching:
        return _load_entry_point(matching[0], builtins)
    known = ", ".join(sorted([*builtins, *(e.name for e in installed)]))
    absent = next((t for t in absent_targets() if t.name == name), None)
    hint = f" ({needs(absent)})" if absent is not None else ""
    raise UnknownTargetError(f"unknown target {name!r}{hint}; known targets: {known}")


def absent_targets() -> list[Target]:
    """The optional built-ins whose package is not installed here."""
    return [t for t in (*OPTIONAL_TARGETS, *TRL_TARGETS) if t.version is None]


def needs(target: Target) -> str:
    """What an absent optional built-in needs, and where its install is said."""
    how = install_command(target.requires) if supported(target.requires) else "docs/install.md, Optional targets"
    return f"it needs {target.requires}, which is not installed here: {how}"

