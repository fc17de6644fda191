"""The terms of a causal-LM run that no known normalisation explains (docs/causal-lm.md, Naming the objective): a
microbatch or a row that supervises nothing and is divided by its own count (NaN), a forward that lets the documents
of a row attend to each other, and the weight each microbatch (or row) carries, fitted to the run's gradients and
held beside the window rule's. :mod:`parity.training.causal.objectives` says which of them a failing run shows.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from oracle.causal_lm import IGNORE_INDEX, Row, next_token_logits

#: A fitted weight within this share of the window rule's is the window rule's (the fit's own rounding is far below).
SAME_WEIGHT = 1e-3
#: How many departing weights a diagnosis lists before "and N more".
LISTED = 6


def served_labels(row: Row) -> list[int]:
    """The row's labels as a collator serves them: its documents side by side, every later document's first label
    -100 (the previous document's last token would otherwise predict it, ``parity.training.causal.drivers.batches``;
    TRL writes -100 where the positions restart too)."""
    labels = []
    for k, document in enumerate(row.documents):
        labels += [IGNORE_INDEX if k else document.labels[0], *document.labels[1:]]
    return labels


def counted_before(row: Row) -> int:
    """The row's labels != -100 as a collator serves them (a later document's first label is -100 there): what a
    count taken before the shift counts."""
    return sum(label != IGNORE_INDEX for label in served_labels(row))


def joined_sum(model: nn.Module, row: Row) -> torch.Tensor:
    """The row's summed next-token cross-entropy with its documents joined: one sequence, positions 0 to the end, every
    token attending to every earlier one across the documents (a forward handed no ``position_ids``, or an
    ``attention_mask`` over the whole row), on the labels as served."""
    device = next(model.parameters()).device
    ids = torch.tensor([[token for document in row.documents for token in document.ids]], device=device)
    targets = torch.tensor(served_labels(row)[1:], device=device)
    logits = next_token_logits(model, ids)[0]
    supervised = targets != IGNORE_INDEX
    if not bool(supervised.any()):
        return logits.sum() * 0.0
    return F.cross_entropy(logits[:-1][supervised].to(torch.float64), targets[supervised], reduction="sum")


def finite_step(step) -> bool:
    """Whether a step's logged loss and every gradient it was handed are finite."""
    return math.isfinite(float(step.loss)) and all(
        grad is None or bool(torch.isfinite(grad).all()) for grad in step.grads.values())


def divided_by_nothing(ranks: Sequence[Sequence[Sequence[Row]]]) -> str | None:
    """Where a step's window divides zero by zero if each microbatch (or else each row) takes its own mean: the
    words naming the first microbatch (or row) that supervises nothing, None where every one supervises something."""
    ranked = len(ranks) > 1
    for r, microbatches in enumerate(ranks):
        for g, microbatch in enumerate(microbatches):
            if not sum(row.supervised for row in microbatch):
                return ("a microbatch that supervises nothing yields NaN: its mean divides by zero (microbatch "
                        f"{g}{f' of rank {r}' if ranked else ''} supervises no position)")
    for r, microbatches in enumerate(ranks):
        for g, microbatch in enumerate(microbatches):
            for i, row in enumerate(microbatch):
                if not row.supervised:
                    return ("a row that supervises nothing yields NaN: its mean divides by zero (row "
                            f"{i} of microbatch {g}{f' of rank {r}' if ranked else ''} supervises no position)")
    return None


def fit_weights(grads: Sequence[dict[str, torch.Tensor]], groups: Sequence[Sequence[int]],
                logged: dict[str, torch.Tensor | None]) -> list[float | None]:
    """One weight per group of rows (a microbatch's, or one row each) such that the weighted sum of the rows'
    float64 gradients is nearest the gradients the run was handed (least squares over every parameter). A group
    whose rows give no gradient is left unweighed (None): nothing in the run tells its weight."""
    names = list(grads[0])
    columns, kept = [], []
    for j, group in enumerate(groups):
        column = torch.cat([sum(grads[i][n] for i in group).flatten() for n in names])
        if bool(column.abs().max() > 0):
            columns.append(column)
            kept.append(j)
    weights: list[float | None] = [None] * len(groups)
    if not columns:
        return weights
    target = torch.cat([(torch.zeros_like(grads[0][n]) if logged.get(n) is None else logged[n].to(torch.float64)
                         ).flatten() for n in names])
    solution = torch.linalg.lstsq(torch.stack(columns, dim=1), target[:, None]).solution[:, 0]
    for j, weight in zip(kept, solution.tolist(), strict=True):
        weights[j] = weight
    return weights


def departing_words(departures: Sequence[tuple[str, float, float]], grain: str = "microbatch") -> str:
    """``departures``: (where, fitted weight, the window rule's) per group (a ``grain``: a microbatch or a row): the
    groups weighted off, by what ratio, or one factor where every group shares it."""
    off = [(where, fitted / right) for where, fitted, right in departures
           if right and abs(fitted / right - 1) > SAME_WEIGHT]
    if not off:
        return ""
    ratios = [ratio for _, ratio in off]
    if len(off) == len(departures) and max(ratios) - min(ratios) <= SAME_WEIGHT * abs(ratios[0]):
        return f"every {grain} weighted {ratios[0]:.4g} x the window rule's weight: one factor, a wrong count"
    listed = "; ".join(f"{where} {ratio:.4g} x" for where, ratio in off[:LISTED])
    more = f"; and {len(off) - LISTED} more" if len(off) > LISTED else ""
    return (f"{len(off)} of {len(departures)} weights depart from the window rule's (fitted to the gradients, "
            f"as a ratio to the window rule's): {listed}{more}")
