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
from dataclasses import dataclass, replace

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


# --- the causal-LM half (docs/causal-lm.md, Two ranks in a session) ---

#: What a causal-LM launch runs: a causal_trainer or a loop, whichever its path names.
CAUSAL_DRIVER = "parity.training.causal.drivers.causal_trainer:run_causal_trainer"


def causal_subject(target: Target) -> str | None:
    """The path of ``target``'s causal-LM interface (its causal trainer, else its loop), None when it has neither."""
    return target.causal_trainer or target.loop


class CausalTwoRanks:
    """The session's causal-LM launch: every subject (a ``causal_trainer`` or ``loop`` path) it judges on every
    two-rank corner (``parity.strategies.causal.TWO_RANK_CORNERS``), launched once, on the first case asked for.

    ``judge`` names the subjects the launch takes with it; a subject first asked for after the launch rides a
    launch of its own (one per process: a worker of ``pytest -n`` holds its own). A case outside the corners, two
    ranks that do not fit the machine, or a loop that declines the case (its ``supports``) raise ``NotOnTwoRanks``
    naming why."""

    def __init__(self) -> None:
        self._judged: list[str] = []
        self._records: dict[tuple[str, object], list | str] = {}

    def judge(self, *subjects: str) -> None:
        self._judged.extend(s for s in subjects if s not in self._judged)

    def records(self, subject: str, case, timeout_s: float = 600) -> list:
        """Every rank's ``CausalRecord`` of ``subject`` on ``case``, a two-rank corner."""
        from parity.strategies.causal import TWO_RANK_CORNERS
        from parity.training.causal.drivers.ranks import run_cases_on_ranks

        if replace(case, dtype="float32") not in {replace(corner, dtype="float32") for corner in TWO_RANK_CORNERS}:
            raise NotOnTwoRanks(f"{case} is not one of the two-rank corners the session launches "
                                "(parity.strategies.causal.TWO_RANK_CORNERS)")
        if misfit := machine_misfit():
            raise NotOnTwoRanks(misfit)
        if (subject, case) not in self._records:
            self.judge(subject)
            # the corners as they are, or all of them in the dtype asked (the report's --dtype)
            corners = list(TWO_RANK_CORNERS) if case in TWO_RANK_CORNERS else [
                replace(corner, dtype=case.dtype) for corner in TWO_RANK_CORNERS]
            pending = [s for s in self._judged if (s, case) not in self._records]
            ran = run_cases_on_ranks(CAUSAL_DRIVER, pending, corners, timeout_s=timeout_s)
            for path, by_case in zip(pending, ran, strict=True):
                self._records.update({(path, corner): result for corner, result in zip(corners, by_case, strict=True)})
        result = self._records[(subject, case)]
        if isinstance(result, str):
            raise NotOnTwoRanks(f"{subject} declined the case on two ranks: {result}")
        return result


#: This process's causal-LM launch, shared by the property table and the tests that judge on two ranks.
CAUSAL_SESSION = CausalTwoRanks()
