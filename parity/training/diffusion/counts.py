"""A window's masked-token count, held to the dtype it is kept in (docs/trainer.md, Counts).

The published objective divides by the window's realized masked count ``N``, an integer. A floating
dtype holds every integer only up to a bound (bfloat16 256, float16 2048, float32 2**24): a count kept
in float16, as an autocast region casts it, is exact on every small case and rounded on a production
window that counts thousands. Comparing losses alone would see a relative error of about 1e-4, which a
float32 budget calls a precision finding; a count is not a rounding, so it is judged on its own: a count
in a dtype that cannot hold its value exactly is a ``normalisation`` finding, naming the dtype, the value it
holds, the bound, and the count the window realized where it is known.
"""

from __future__ import annotations

import torch

#: Every integer of magnitude up to this is exact in the dtype (2 ** (mantissa bits + 1)).
EXACT_INTEGERS = {torch.bfloat16: 2**8, torch.float16: 2**11, torch.float32: 2**24, torch.float64: 2**53}


def scalar_tensor(count) -> torch.Tensor | None:
    """The count as a one-element tensor: itself, or the one such tensor an object of the target's holds
    (impl's ``WindowCount.num_items``); None when there is no single one to read."""
    if isinstance(count, torch.Tensor):
        return count if count.numel() == 1 else None
    held = [value for value in getattr(count, "__dict__", {}).values() if isinstance(value, torch.Tensor) and value.numel() == 1]
    return held[0] if len(held) == 1 else None


def count_problem(count, where: str, realized: int | None = None) -> str | None:
    """Why ``count`` (a window's count as the target keeps it) cannot hold the window's count exactly, or None: a
    floating tensor above its dtype's exact-integer bound. ``realized`` is named beside it. Which value a target
    keeps (its window's count, or that times the world size, or another count of its objective) is not judged
    here: the losses judge the objective, so a correct target that keeps another scalar is no finding."""
    count = scalar_tensor(count)
    if count is None:
        return None
    value = float(count)
    realized_text = f" (the window masked {realized})" if realized is not None else ""
    bound = EXACT_INTEGERS.get(count.dtype)
    if count.dtype.is_floating_point and bound is not None and abs(value) > bound:
        name = str(count.dtype).removeprefix("torch.")
        return (f"{where}: the window's count is a {name} tensor holding {value:g}{realized_text}; {name} holds every "
                f"integer only up to {bound}, so a count above it is rounded (keep it in int64 or float32)")
    return None
