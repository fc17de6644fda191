"""The declared space of a whole training run (docs/trainer.md, The case space): the eps a trainer accepts, the
choices a run is drawn from, and :func:`draw_trainer_case`, read by the suite's strategy and the two-rank sampler
alike, so both draw from one declaration. The case type itself is :class:`parity.cases.TrainerCase`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

from parity.cases import PUBLISHED_EPS, TrainerCase
from parity.devices import DTYPES

T = TypeVar("T")


@dataclass(frozen=True)
class EpsDomain:
    """The eps a trainer accepts: ``(low, high]``, or ``(low, high)`` when ``high_closed`` is False
    (docs/trainer.md, What a target may bring). The default is the published noising's ``(0, 1]``."""

    low: float = 0.0
    high: float = 1.0
    high_closed: bool = True

    def __post_init__(self):
        if not 0.0 <= self.low < self.high <= 1.0:
            raise ValueError(f"an eps domain needs 0 <= low < high <= 1, got low={self.low!r}, high={self.high!r}")

    def __contains__(self, eps: float) -> bool:
        return self.low < eps and (eps <= self.high if self.high_closed else eps < self.high)

    def fit(self, eps: float) -> float:
        """``eps`` when it lies inside; else the nearest value inside, a thousandth of the domain's width
        from the edge it passed (1.0 in ``(0, 1)`` runs at 0.999): a drawn case is moved, never wasted."""
        if eps in self:
            return eps
        margin = 1e-3 * (self.high - self.low)
        return self.low + margin if eps <= self.low else (self.high if self.high_closed else self.high - margin)

    def __str__(self) -> str:
        return f"({self.low:g}, {self.high:g}{']' if self.high_closed else ')'}"


#: The published noising's eps domain, which every trainer has unless its target declares another.
PUBLISHED_EPS_DOMAIN = EpsDomain()


class Draws(Protocol):
    """One source of choices: Hypothesis's ``draw`` (shrinkable) or a seeded ``random.Random``."""

    def integer(self, low: int, high: int) -> int: ...

    def choice(self, values: Sequence[T]) -> T: ...

    def boolean(self) -> bool: ...

    def fraction(self, low: float, high: float) -> float: ...

    def label(self, text: str) -> None:
        """Say what was drawn (Hypothesis's ``event``; nothing for a plain random source)."""


#: eps values that matter besides the published one: a middling one, and two where p is never small.
NOTABLE_EPS = (0.05, 0.5, 1.0)
#: A rank is all prompt (realizes no mask) one time in this many.
EMPTY_RANK_ONE_IN = 6
#: One run in this many is drawn from the whole space; the others where a wrong count can show.
WHOLE_SPACE_ONE_IN = 4
#: In a run whose microbatches hold several rows, a row is all prompt one time in this many, so
#: rows with and without an answer share microbatches.
PROMPT_ONLY_ONE_IN = 3


def draw_trainer_case(
    draw: Draws, world_size: int = 1, dtypes: Sequence[str] = DTYPES, eps_domain: EpsDomain = PUBLISHED_EPS_DOMAIN
) -> TrainerCase:
    """The declared space of whole runs, weighted towards runs that can reveal a normalisation or
    noise bug: three in four have windows of several microbatches and evaluate in several batches
    (so counts can differ within a window and between batches); the fourth comes from the whole
    space, single-microbatch windows and no evaluation included. Microbatches of one to three rows;
    with several, some rows are all prompt, beside rows with an answer. The eps stays inside the
    trainer's ``eps_domain``. Every choice falls back (shrinks) to the simplest value: the weighted
    part first, False before True, one row per microbatch, the published eps first."""
    weighted = draw.integer(1, WHOLE_SPACE_ONE_IN) < WHOLE_SPACE_ONE_IN
    draw.label("whole run: windows of several microbatches, several evaluation batches" if weighted else "whole run: any")
    rows = draw.integer(2, 6) if weighted else draw.integer(1, 6)
    window_size = draw.integer(2, 3) if weighted else draw.integer(1, 3)
    evaluate = weighted or not draw.boolean()
    eval_batch_size = draw.integer(1, rows - 1) if weighted else draw.integer(0, rows)
    # In the weighted part, at least two microbatches per rank, so a window can hold several.
    train_batch_size = draw.integer(1, max(1, rows // 2)) if weighted else draw.integer(1, 3)
    prompt_only = ()
    if train_batch_size > 1:
        draw.label("whole run: microbatches of several rows")
        prompt_only = tuple(i for i in range(rows * world_size) if draw.integer(1, PROMPT_ONLY_ONE_IN) == PROMPT_ONLY_ONE_IN)
    dtype = draw.choice(dtypes)
    eps = PUBLISHED_EPS
    if draw.boolean():
        notable = [value for value in NOTABLE_EPS if value in eps_domain]
        eps = draw.choice(notable) if notable and draw.boolean() else draw.fraction(PUBLISHED_EPS, eps_domain.high)
    return TrainerCase(
        examples_per_rank=rows,
        window_size=window_size,
        max_length=draw.integer(2, 10),
        data_seed=draw.integer(0, 2**16),
        noise_seed=draw.integer(0, 2**16),
        seed_per_rank=draw.boolean(),
        model_seed=draw.integer(0, 3),
        dtype=dtype,
        autocast=dtype == "float16" or (dtype == "bfloat16" and draw.boolean()),
        average_tokens_across_devices=not draw.boolean(),
        empty_ranks=tuple(r for r in range(world_size) if draw.integer(1, EMPTY_RANK_ONE_IN) == EMPTY_RANK_ONE_IN),
        evaluate=evaluate,
        eval_batch_size=eval_batch_size,
        eps=eps_domain.fit(eps),
        train_batch_size=train_batch_size,
        prompt_only_rows=prompt_only,
    )
