"""Input-contract findings: the batch a collator served, or the ids the model received, are not the rows
under the EOS rule (docs/trainer.md, Reading an input-contract finding).

Two places can break the contract, and each finding names the first position that differs:

* the **collator** (the harness's, or one a trainer ships with, which may apply the EOS rule itself):
  the batch it served, under the EOS rule, must be the rows it was given, right-padded to the
  served width under the rule (``oracle.nemotron_diffusion.eos_padding_rule``);
* the **trainer**, between the batch and the model: the ids the encoder received must be the batch's
  (a prepended BOS token, a truncation: another shape), and labels it hands the model must not be
  shifted against the batch's.

These are not noise: the draws may be the published ones; it is what they were drawn on that differs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch

from oracle.nemotron_diffusion import IGNORE_INDEX, eos_padding_rule


def _right_padded(examples: Sequence[Mapping], width: int) -> dict[str, torch.Tensor]:
    def padded(key: str, fill: int) -> torch.Tensor:
        return torch.tensor([list(e[key]) + [fill] * (width - len(e[key])) for e in examples])

    lengths = [len(e["input_ids"]) for e in examples]
    return {
        "input_ids": padded("input_ids", 0),
        "attention_mask": torch.tensor([[1] * n + [0] * (width - n) for n in lengths]),
        "labels": padded("labels", IGNORE_INDEX),
    }


def _first_difference(a: torch.Tensor, b: torch.Tensor) -> tuple[int, int]:
    row, position = (a != b).nonzero()[0].tolist()
    return row, position


def _shifted(served: torch.Tensor, reference: torch.Tensor, by: int) -> bool:
    """Whether ``served`` is ``reference`` moved right by ``by`` positions (left when negative), where both exist."""
    if by > 0:
        return bool(torch.equal(served[:, by:], reference[:, : reference.shape[1] - by]))
    return bool(torch.equal(served[:, :by], reference[:, -by:]))


def served_batch_differs(examples: Sequence[Mapping], batch: Mapping[str, torch.Tensor], eos_token_id: int | None) -> str | None:
    """Why the batch a collator served from ``examples`` is not those rows under the EOS rule; None when it is."""
    if not all("input_ids" in e and "labels" in e for e in examples) or "input_ids" not in batch:
        return None
    ids = batch["input_ids"]
    longest = max(len(e["input_ids"]) for e in examples)
    if ids.dim() != 2 or ids.shape[0] != len(examples) or ids.shape[1] < longest:
        return (
            f"the collator served input_ids of shape {tuple(ids.shape)} for {len(examples)} rows of up to {longest} tokens"
        )
    reference = _right_padded(examples, ids.shape[1])
    served_rule = eos_padding_rule(ids, batch.get("attention_mask"), batch.get("labels"), eos_token_id)
    reference_rule = eos_padding_rule(reference["input_ids"], reference["attention_mask"], reference["labels"], eos_token_id)
    for what, served, expected in zip(
        ("the model's ids", "the targets", "the maskable positions"), served_rule[:3], reference_rule[:3], strict=True
    ):
        served, expected = served.long(), expected.long()
        if torch.equal(served, expected):
            continue
        row, position = _first_difference(served, expected)
        shift = next((by for by in (1, -1) if _shifted(served, expected, by)), 0)
        how = {1: ": shifted right by one (a token prepended)", -1: ": shifted left by one", 0: ""}[shift]
        return (
            f"the collator's batch, under the EOS rule, is not its rows under the EOS rule: {what} differ{how}, first at "
            f"row {row} position {position} ({int(served[row, position])} served, {int(expected[row, position])} expected)"
        )
    return None


def received_differs(received: torch.Tensor, batch_ids: torch.Tensor, mask_token_id: int) -> str | None:
    """Why the ids the encoder received (the mask token where masked) are not of the batch's shape,
    naming a prepended or appended token, or the first position that differs; None when the shapes agree."""
    if received.shape == batch_ids.shape:
        return None
    shape = f"the model received ids of shape {tuple(received.shape)} for a batch of {tuple(batch_ids.shape)}"
    if received.dim() != 2 or received.shape[0] != batch_ids.shape[0]:
        return f"{shape}: another number of rows"
    extra = received.shape[1] - batch_ids.shape[1]
    if extra > 0:
        for start, where in ((extra, "prepended to"), (0, "appended to")):
            kept = received[:, start : start + batch_ids.shape[1]]
            if bool(((kept == batch_ids) | (kept == mask_token_id)).all()):
                added = received[:, :start] if start else received[:, batch_ids.shape[1] :]
                tokens = ", ".join(str(int(t)) for t in added[0])
                return f"{shape}: {extra} token{'s' * (extra > 1)} (id {tokens} in row 0) {where} every row"
    common = min(received.shape[1], batch_ids.shape[1])
    differs = (received[:, :common] != batch_ids[:, :common]) & (received[:, :common] != mask_token_id)
    if bool(differs.any()):
        row, position = differs.nonzero()[0].tolist()
        return f"{shape}: first different at row {row} position {position} ({int(received[row, position])} received, " \
               f"{int(batch_ids[row, position])} in the batch)"
    return f"{shape}: the batch's first {common} positions, {'truncated' if extra < 0 else 'then more'}"


def labels_shifted(given: torch.Tensor, targets: torch.Tensor) -> str | None:
    """Why the labels a trainer handed the model are the batch's targets shifted by a position; None
    otherwise (labels that differ in another way are left to the tensor comparisons)."""
    if given.shape != targets.shape or given.dim() != 2 or given.shape[1] < 2:
        return None
    both = (given != IGNORE_INDEX) & (targets != IGNORE_INDEX)
    if bool((given[both] == targets[both]).all()):
        return None
    for by, how in ((-1, "left"), (1, "right")):
        inside = slice(0, -1) if by == -1 else slice(1, None)
        moved = torch.roll(targets, by, dims=1)[:, inside]
        shown = given[:, inside]
        overlap = (shown != IGNORE_INDEX) & (moved != IGNORE_INDEX)
        if bool(overlap.any()) and bool((shown[overlap] == moved[overlap]).all()):
            row, position = ((given != targets) & (given != IGNORE_INDEX)).nonzero()[0].tolist()
            return (
                f"the labels the model was given are the batch's shifted {how} by one (the next-token convention), first "
                f"at row {row} position {position} ({int(given[row, position])} given, "
                f"{int(targets[row, position])} in the batch)"
            )
    return None
