"""Replaying a run's noise: one consistent account of every forward's masks (docs/trainer.md, Replaying the noise).

The published noising draws every row's ``t``, then one uniform per token, from torch's global
generator. A trainer may draw wherever it likes (the whole window in ``get_batch_samples``, batch
by batch as it fetches them, in ``compute_loss``, in ``prediction_step``, or leave it to the model's
forward), so the harness does not assume where: it explains the masks it observed with draws from
the generator states it recorded (the *timeline*).

An *account* cuts the forwards, in order, into segments: each segment's draws start at one
recorded state, run one after another (a window drawn at once is one segment), and end in a state
the run was later seen in. The segments follow the generator: each starts at or after the state
the previous one ended in, after its batches were collated, and ends by its first forward. The
account is chosen jointly by backtracking, states tried in generator order, so a later batch's state
that explains an earlier forward by coincidence (few maskable tokens, none masked) cannot make the
real draws unexplainable. Where no account exists, the finding names the first forward that none
explains, the states tried, and the published order. Before any account, the timeline must only move
forward: a state the run returns to (a re-seed) is a finding of its own (docs/trainer.md, Where a
trainer may draw).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from oracle.nemotron_diffusion import eos_padding_rule
from oracle.window_reference import Draw
from parity.compare import Finding
from parity.training.diffusion.drivers.input_contract import labels_shifted, received_differs, served_batch_differs
from parity.training.observe import ObservedForward, RunObserver


def replay_draws(state: torch.Tensor, maskable: torch.Tensor, eps: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The published noising from ``state``: ``(masked, p, the state the draws end in)``."""
    generator = torch.Generator()
    generator.set_state(state)
    rows, length = maskable.shape
    t = torch.rand(rows, generator=generator)
    p = ((1 - eps) * t + eps)[:, None].expand(rows, length).contiguous()
    masked = (torch.rand(rows, length, generator=generator) < p) & maskable
    return masked, p, generator.get_state()


class Timeline:
    """The recorded generator states, and where each state occurs."""

    def __init__(self, states: list[torch.Tensor]):
        self.states = states
        self._positions: dict[bytes, list[int]] = {}
        for position, state in enumerate(states):
            self._positions.setdefault(bytes(state.numpy()), []).append(position)

    def positions(self, state: torch.Tensor) -> list[int]:
        return self._positions.get(bytes(state.numpy()), [])

    def first_return(self, start: int = 0) -> tuple[int, int] | None:
        """``(position, earlier position)`` of the first state the generator came back to from timeline
        ``start`` on (the seeded state: what came before is another run's), or None when it only moved
        forward. Consecutive duplicates are not recorded, so a state seen twice was left and returned to:
        a re-seed or ``set_rng_state``, never a draw (the period is 2**19937 - 1)."""
        for position in range(start, len(self.states)):
            earlier = [p for p in self.positions(self.states[position]) if start <= p < position]
            if earlier:
                return position, earlier[0]
        return None


@dataclass(frozen=True)
class Forward:
    """A forward to explain: its batch as served, what may be masked, what was masked."""

    index: int
    observed: ObservedForward
    batch: dict[str, torch.Tensor]
    model_ids: torch.Tensor
    targets: torch.Tensor
    maskable: torch.Tensor
    masked: torch.Tensor
    collated_at: int

    @property
    def name(self) -> str:
        return f"{self.observed.phase} forward {self.index}"


@dataclass(frozen=True)
class Segment:
    """Forwards ``first`` .. ``first + len(p) - 1`` drawn one after another from timeline ``start``,
    ending in the state recorded at timeline ``end``; ``p`` is each one's replayed ``p``."""

    start: int
    end: int
    first: int
    p: tuple[torch.Tensor, ...]


class NoiseAccount:
    """The search for one consistent account of a run's forwards (see the module docstring)."""

    def __init__(self, timeline: Timeline, forwards: list[Forward], eps: float):
        self.timeline, self.forwards, self.eps = timeline, forwards, eps
        self._segments: dict[tuple[int, int], Segment | None] = {}
        self._dead: set[tuple[int, int]] = set()
        #: The first forward no account explains, and the states tried as the start of its draws.
        self.stuck_at = 0
        self.tried: set[int] = set()

    def segment(self, start: int, k: int) -> Segment | None:
        """Forward k's draws from timeline ``start``, chained over the next forwards until they end in
        a recorded state; None when a replay misses its masks first."""
        key = (start, k)
        if key not in self._segments:
            self._segments[key] = self._chain(start, k)
        return self._segments[key]

    def _chain(self, start: int, k: int) -> Segment | None:
        state, ps = self.timeline.states[start], []
        for forward in self.forwards[k:]:
            if forward.collated_at > start:  # its batch was not served when the draws began
                return None
            masked, p, state = replay_draws(state, forward.maskable, self.eps)
            if not torch.equal(masked, forward.masked):
                return None
            ps.append(p)
            ends = [e for e in self.timeline.positions(state) if start < e <= self.forwards[k].observed.seen_at]
            if ends:
                return Segment(start, ends[0], k, tuple(ps))
        return None

    def search(self) -> list[Segment] | None:
        """The first account in generator order (the recursion is one level per segment)."""
        return self._explain(0, 0)

    def _explain(self, k: int, after: int) -> list[Segment] | None:
        """An account of forwards k, k+1, ... whose draws start at timeline ``after`` or later."""
        if k == len(self.forwards):
            return []
        if (k, after) in self._dead:
            return None
        forward = self.forwards[k]
        starts = range(max(after, forward.collated_at), forward.observed.seen_at)
        for start in starts:
            segment = self.segment(start, k)
            if segment is not None:
                rest = self._explain(k + len(segment.p), segment.end)
                if rest is not None:
                    return [segment, *rest]
        self._dead.add((k, after))
        if k > self.stuck_at:
            self.stuck_at, self.tried = k, set()
        if k == self.stuck_at:
            self.tried.update(starts)
        return None


def published_order(forward: Forward, eps: float, eps_source: str) -> str:
    rows, length = forward.maskable.shape
    return (
        f"the published order from the global generator: every row's t ({rows} draw{'s' * (rows != 1)}), then one "
        f"uniform per token ({rows}x{length}), p = (1 - eps) t + eps with eps = {eps:g} ({eps_source}); a token is "
        f"masked where its uniform is below p and it is maskable ({int(forward.maskable.sum())} here, "
        f"{int(forward.masked.sum())} masked)"
    )


def _unexplained(account: NoiseAccount, eps_source: str) -> Finding:
    forward = account.forwards[account.stuck_at]
    tried = sorted(account.tried)
    if tried:
        after = f", each after an account of forwards 0-{forward.index - 1}" if forward.index else ""
        where = (
            f"Tried as the start of its draws: {len(tried)} recorded generator states (timeline positions "
            f"{tried[0]}-{tried[-1]}), between its batch's collation and its forward{after}"
        )
    else:
        where = "The global generator did not move between its batch's collation and its forward, so they were not drawn from it"
    return Finding(
        "noise",
        f"{forward.name}: no consistent account of the run's noise explains its masks. {where}. "
        f"Expected {published_order(forward, account.eps, eps_source)}",
    )


def _went_back(position: int, earlier: int) -> Finding:
    return Finding(
        "noise",
        f"the global generator went back to a state it had left (timeline position {position} is position {earlier} "
        "again): the run re-seeded it (torch.manual_seed) or set its state, so later draws repeat earlier ones instead of "
        "following the one timeline args.seed starts",
    )


def _unreplayable(forward: Forward, mask_token_id: int) -> Finding | None:
    """Why a forward's masks cannot be the published draws, whatever the account; None when they may be.
    What the model received in another shape, or with shifted labels, is an input-contract finding."""
    given, masked, maskable = forward.observed.kwargs or {}, forward.masked, forward.maskable
    received = received_differs(forward.observed.noisy_ids, forward.model_ids, mask_token_id)
    if received:
        return Finding("input-contract", f"{forward.name}: {received}")
    shifted = labels_shifted(given["labels"], forward.targets) if given.get("labels") is not None else None
    if shifted:
        return Finding("input-contract", f"{forward.name}: {shifted}")
    if "labels" in given and "masked_indices" not in given and bool((given["input_ids"] == mask_token_id).any()):
        return Finding("noise", f"{forward.name}: the model was given labels without masked_indices and ids that already "
                       "hold the mask token: it noised them again (docs/diffusion-model.md, The model contract)")
    outside = masked & ~maskable
    if outside.any():
        row, position = outside.nonzero()[0].tolist()
        return Finding("noise", f"{forward.name}: {int(outside.sum())} masked positions are not maskable under the EOS rule, "
                       f"first at row {row} position {position}")
    expected = torch.where(masked, mask_token_id, forward.model_ids)
    padding_as_served = _padding_left_as_served(forward, expected)
    if padding_as_served:
        return Finding("input-contract", f"{forward.name}: {padding_as_served}")
    if not torch.equal(forward.observed.noisy_ids, expected):
        row, position = (forward.observed.noisy_ids != expected).nonzero()[0].tolist()
        return Finding("noise", f"{forward.name}: the unmasked ids the model received are not the batch under the EOS rule, "
                       f"first at row {row} position {position} ({int(forward.observed.noisy_ids[row, position])} received, "
                       f"{int(expected[row, position])} under the rule)")
    return None


def _padding_left_as_served(forward: Forward, expected: torch.Tensor) -> str | None:
    """Why the model received the padding as the collator served it instead of under the EOS rule (EOS
    ids), when that is every difference; None otherwise. Nothing random differs there: it is the input."""
    received, served = forward.observed.noisy_ids, forward.batch.get("input_ids")
    attention = forward.batch.get("attention_mask")
    if served is None or attention is None or served.shape != received.shape:
        return None
    differs = received != expected
    padding = attention == 0
    if not bool(differs.any()) or not bool((differs <= padding).all()) or not bool((received[differs] == served[differs]).all()):
        return None
    row, position = differs.nonzero()[0].tolist()
    return (f"the model received {int(differs.sum())} padding positions as the collator served them (id "
            f"{int(served[row, position])} at row {row} position {position}), not as EOS ({int(expected[row, position])}) "
            "under the EOS rule: the trainer skipped the rule for this batch")


def _prepare(
    observer: RunObserver, phases: Sequence[str], mask_token_id: int, eos_token_id: int | None
) -> tuple[list[Forward], list[Finding]]:
    """Pair each forward of ``phases`` with its batch (per phase, in order); the findings that need no replay."""
    findings: list[Finding] = []
    for phase in phases:
        batches = observer.batches.get(phase, [])
        ran = sum(f.phase == phase for f in observer.forwards)
        if ran != len(batches):
            findings.append(Finding("noise", f"{phase}: the model ran {ran} forward passes for {len(batches)} served batches"))
    if findings:
        return [], findings
    cursor = {phase: iter(observer.batches.get(phase, [])) for phase in phases}
    forwards = []
    for index, seen in enumerate(observer.forwards):
        if seen.phase not in cursor:
            continue
        served = next(cursor[seen.phase])
        batch = served.batch
        served_differs = served_batch_differs(served.examples, batch, eos_token_id)
        if served_differs:
            findings.append(Finding("input-contract", f"{seen.phase} forward {index}: {served_differs}"))
            continue
        ids, attention, labels = batch["input_ids"], batch.get("attention_mask"), batch.get("labels")
        model_ids, targets, maskable, _ = eos_padding_rule(ids, attention, labels, eos_token_id)
        forward = Forward(index, seen, batch, model_ids, targets, maskable, seen.noisy_ids == mask_token_id, served.collated_at)
        forwards.append(forward)
        why = _unreplayable(forward, mask_token_id)
        if why:
            findings.append(why)
    return forwards, findings


def _passed_values(forward: Forward, p: torch.Tensor) -> list[Finding]:
    """What the trainer passed the model beside the ids must agree with the account."""
    findings, given, masked = [], forward.observed.kwargs or {}, forward.masked
    if given.get("p_mask") is not None and masked.any():
        a, b = given["p_mask"][masked].double(), p[masked].double()
        if not torch.allclose(a, b, rtol=4 * torch.finfo(torch.float32).eps, atol=0):
            worst = (a - b).abs().max().item()
            findings.append(Finding("noise", f"{forward.name}: p_mask differs from the replayed p by up to {worst:.3e}"))
    if given.get("masked_indices") is not None and not torch.equal(given["masked_indices"].bool(), masked):
        findings.append(Finding("noise", f"{forward.name}: masked_indices differ from the mask placed in the ids"))
    return findings


def replay_noise(
    observer: RunObserver, phases: Sequence[str], mask_token_id: int, eos_token_id: int | None, eps: float, eps_source: str,
    seeded_at: int = 0,
) -> tuple[list[tuple[str, Draw]], list[Finding]]:
    """Every forward of ``phases``' ``(phase, Draw)`` with its replayed ``p``, in order; or the noise and
    input-contract findings.

    Training and evaluation are replayed apart (each its own account): evaluation's batches are
    collated after training ends, so its draws cannot start earlier, and a finding in one leaves
    the other's account standing. ``eps_source`` says where ``eps`` came from; ``seeded_at`` is
    the timeline position of the seeded state, from which the generator must only move forward.
    """
    forwards, findings = _prepare(observer, phases, mask_token_id, eos_token_id)
    if findings:
        return [], findings
    timeline = Timeline(observer.timeline)
    if (returned := timeline.first_return(seeded_at)) is not None:
        return [], [_went_back(*returned)]
    account = NoiseAccount(timeline, forwards, eps)
    segments = account.search()
    if segments is None:
        return [], [_unexplained(account, eps_source)]
    draws = []
    for segment in segments:
        for offset, p in enumerate(segment.p):
            forward = forwards[segment.first + offset]
            findings += _passed_values(forward, p)
            draws.append((forward.observed.phase, Draw(forward.batch, forward.masked, p)))
    return draws, findings
