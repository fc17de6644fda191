"""The two-rank launch of a test session: every trainer the session judges in one launch, and for a target
that cannot be in it, why (docs/running.md, Distributed runs).

The ranks' start and imports (about 7 s a rank) are paid once, and each further trainer costs its four runs
only (about a second each), so a session launches once, bounded like any call (``parity.safety.bounds``). A
target is left out of the launch when it has no trainer, when its trainer declares one rank only
(``ShippedTrainer.one_rank_only``), or when two ranks do not fit the machine; asking for its verdicts then
raises ``NotOnTwoRanks`` with that reason, as does a case its trainer declined, so a test skips naming why
and never meets a trainer that did not run as a missing key. A rank that fails fails the launch with its
``RankFailed``, as every launch does (docs/faults.md, Ranks).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass

from parity.devices import ranks_fit
from parity.targets import Target
from parity.training.launch.processes import launch
from parity.training.shipped import as_shipped

WORLD_SIZE = 2


class NotOnTwoRanks(LookupError):
    """A trainer or case the session's launch holds no verdict for; the message says why."""


def left_out(target: Target) -> str | None:
    """Why ``target`` cannot be in the launch (None when it can): no trainer interface, or a trainer that
    declares one rank only."""
    if not target.provides("trainer"):
        return f"target {target.name!r} has no trainer interface"
    declared = as_shipped(target.load("trainer")).one_rank_only
    return f"target {target.name!r} trains on one rank only, as its ShippedTrainer declares: {declared}" if declared else None


def machine_misfit() -> str | None:
    """Why two ranks do not fit this machine (None when they do): Gloo gives each rank a CPU core."""
    if ranks_fit("cpu", WORLD_SIZE):
        return None
    return f"{WORLD_SIZE} ranks do not fit this machine: Gloo gives each rank a CPU core, and it has {os.cpu_count() or 1}"


@dataclass(frozen=True)
class TwoRankVerdicts:
    """``parity.training.diffusion.drivers.ranks``'s verdicts by trainer (a target's name, or the ``MODULE:CLASS`` path of a
    trainer that is not one) and case, and why each target left out is not there."""

    verdicts: dict[str, dict[str, dict]]
    reasons: dict[str, str]
    #: Why nothing was launched: two ranks do not fit the machine, or no target could be in the launch.
    refused: str | None = None

    def of(self, trainer: str) -> dict[str, dict]:
        """Every case ``trainer`` ran; ``NotOnTwoRanks`` naming why it did not run."""
        if trainer not in self.verdicts:
            raise NotOnTwoRanks(self.reasons.get(trainer) or self.refused or f"{trainer} is not in this session's two-rank launch")
        return self.verdicts[trainer]

    def case(self, trainer: str, case: str) -> dict:
        """``trainer``'s verdict on ``case``; ``NotOnTwoRanks`` where it did not run or declined the case."""
        verdict = self.of(trainer)[case]
        if "declined" in verdict:
            raise NotOnTwoRanks(f"{trainer} declined {case} on two ranks: {verdict['declined']}")
        return verdict


def launch_trainers(targets: Sequence[Target], trainers: Sequence[str] = (), arguments: Sequence[str] = (),
                    timeout_s: float = 600) -> TwoRankVerdicts:
    """``targets`` (each that can train on two ranks) and the ``trainers`` paths in one launch of
    ``parity.training.diffusion.drivers.ranks``, with its further ``arguments`` (``--draw``, ``--also``, ``--case``)."""
    if misfit := machine_misfit():
        return TwoRankVerdicts({}, {}, misfit)
    reasons = {target.name: reason for target in targets if (reason := left_out(target))}
    names = [target.name for target in targets if target.name not in reasons]
    labels = [*trainers, *names]  # ddp_cases keys a lone trainer's cases by the case alone
    if not labels:  # nothing to launch: what rides along (``--also``) is left out for the targets' reasons
        return TwoRankVerdicts({}, reasons, "; ".join(reasons.values()) or None)
    with tempfile.TemporaryDirectory(prefix="parity-ddp-session-") as folder:
        path = os.path.join(folder, "verdicts.json")
        launch("parity.training.diffusion.drivers.ranks", [*(a for p in trainers for a in ("--trainer", p)),
                                             *(a for n in names for a in ("--target", n)), "--json", path, *arguments],
               WORLD_SIZE, timeout_s=timeout_s)
        with open(path) as handle:
            cases = json.load(handle)["cases"]
    verdicts: dict[str, dict[str, dict]] = {}
    for key, verdict in cases.items():
        label, _, case = key.rpartition(" ")
        verdicts.setdefault(label or labels[0], {})[case] = verdict
    return TwoRankVerdicts(verdicts, reasons)
