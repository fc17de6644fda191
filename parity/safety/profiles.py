"""The harness's Hypothesis profiles (docs/design.md, Test-suite practice).

Registered by the pytest plugin in a parity session only, so a project that merely has the package
installed never imports Hypothesis through it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from hypothesis import HealthCheck, Phase, settings

#: Model-sized examples are slow and their timing is noisy on shared cores: no deadline anywhere.
_COMMON = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
#: ``hypothesis.target()`` optimisation runs past ``max_examples``; only the nightly profile may spend that.
_BOUNDED_PHASES = (Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink)

PROFILES = {
    # Few examples, local example database: a quick loop while editing.
    "dev": settings(max_examples=25, phases=_BOUNDED_PHASES, **_COMMON),
    # Builds on Hypothesis's own ``ci`` profile (derandomized, no database, print_blob); Hypothesis
    # selects that name by itself when ``CI`` is set. A hard, known example count: no target phase.
    "ci": settings(settings.get_profile("ci"), max_examples=25, phases=_BOUNDED_PHASES, **_COMMON),
    # Heavy exploration, ``target()`` on the worst error/budget ratio, database kept.
    "nightly": settings(max_examples=1000, **_COMMON),
}


def register_profiles() -> None:
    for name, profile in PROFILES.items():
        settings.register_profile(name, profile)


def default_profile() -> str:
    """``$HYPOTHESIS_PROFILE``, else ``ci`` when ``CI`` is set, else ``dev``."""
    return os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev")


class UnknownProfile(ValueError):
    """A profile name that no one registered: a usage error naming the known ones."""


def check_profile(field: str, name: str) -> None:
    """Raise :class:`UnknownProfile` unless ``name`` is a registered profile (a conftest's own too)."""
    from hypothesis.errors import InvalidArgument

    try:
        settings.get_profile(name)
    except InvalidArgument:
        known = sorted(getattr(settings, "_profiles", PROFILES))
        raise UnknownProfile(f"{field} {name!r} is not a Hypothesis profile; known profiles: {', '.join(known)}") from None


def load_default_profile() -> None:
    """The default profile (:func:`default_profile`), checked first so that a misspelt
    ``$HYPOTHESIS_PROFILE`` is a usage error, not an INTERNALERROR."""
    profile = default_profile()
    check_profile("$HYPOTHESIS_PROFILE" if "HYPOTHESIS_PROFILE" in os.environ else "the default profile", profile)
    settings.load_profile(profile)


@dataclass(frozen=True)
class ProfileState:
    """The loaded profile's name and the harness's profiles as registered: what a pytest session sets globally."""

    current: str
    registered: dict[str, settings]


def kept_profiles() -> ProfileState:
    """The profiles as they stand, before a session loads its own. A session run inside another one's process
    (pytester's in-process runs, a test of the harness's own output) would otherwise leave its profile loaded for
    every later test of that worker: the nightly's property tests would draw the ``dev`` profile's 25 examples,
    the ``ci`` run's a database and fresh randomness."""
    from hypothesis.errors import InvalidArgument

    registered = {}
    for name in PROFILES:
        try:
            registered[name] = settings.get_profile(name)
        except InvalidArgument:  # not registered yet: nothing to put back
            continue
    return ProfileState(settings.get_current_profile_name(), registered)


def restore_profiles(state: ProfileState) -> None:
    """Put back what :func:`kept_profiles` kept, when the session that changed it ends."""
    for name, profile in state.registered.items():
        settings.register_profile(name, profile)
    settings.load_profile(state.current)
