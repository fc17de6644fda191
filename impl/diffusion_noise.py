"""Noise preparation for masked-diffusion training: the EOS-padding rule and the retained draws.

Kept apart from the forward pass on purpose (docs/diffusion-model.md): the whole accumulation window is noised
before any microbatch runs, so its masked-token count is known when the first loss is formed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch

IGNORE_INDEX = -100


def validate_window(
    window: Sequence[Mapping[str, torch.Tensor]], *, mask_token_id: int, vocab_size: int | None, eps: float
) -> None:
    """Reject, at the boundary, what would otherwise be a silent wrong answer."""
    if len(window) == 0:
        raise ValueError("window: an accumulation window must hold at least one microbatch")
    if not 0.0 < eps <= 1.0:
        raise ValueError(f"eps must lie in (0, 1], got {eps!r}")
    if vocab_size is not None and not 0 <= mask_token_id < vocab_size:
        raise ValueError(f"mask_token_id must lie in [0, {vocab_size}) (the vocabulary), got {mask_token_id}")
    for g, batch in enumerate(window):
        ids = batch.get("input_ids")
        if not isinstance(ids, torch.Tensor) or ids.dim() != 2:
            raise ValueError(f"window[{g}]['input_ids'] must be a 2-D tensor [rows, length]")
        for key in ("attention_mask", "labels"):
            other = batch.get(key)
            if other is not None and tuple(other.shape) != tuple(ids.shape):
                raise ValueError(
                    f"window[{g}]['{key}'] has shape {tuple(other.shape)}, "
                    f"but input_ids has shape {tuple(ids.shape)}; they must match"
                )


def apply_eos_padding(
    batch: Mapping[str, torch.Tensor], eos_token_id: int | None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """``(model_ids, targets, maskable, run_attention_mask)`` under the EOS rule (docs/diffusion-model.md).

    Maskable means supervised and attended. With an attention mask and an EOS id, padding becomes
    EOS, becomes a maskable EOS target in rows that have a response, and is attended.
    """
    ids = batch["input_ids"]
    attention_mask = batch.get("attention_mask")
    labels = batch.get("labels")
    attended = torch.ones_like(ids, dtype=torch.bool) if attention_mask is None else attention_mask != 0
    supervised = torch.ones_like(attended) if labels is None else labels != IGNORE_INDEX
    maskable = attended & supervised
    targets = ids if labels is None else labels
    if attention_mask is None or eos_token_id is None:
        return ids, targets, maskable, attention_mask
    padding = ~attended
    model_ids = ids.masked_fill(padding, eos_token_id)
    if labels is None:
        return model_ids, targets, maskable, None
    padding_targets = padding & maskable.any(dim=1, keepdim=True)
    targets = targets.masked_fill(padding_targets, eos_token_id)
    return model_ids, targets, maskable | padding_targets, None


def draw_masks(
    maskable: torch.Tensor, eps: float, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-row ``t``, then per-token uniforms, on the generator's device; masks never leave ``maskable``."""
    rows, length = maskable.shape
    t = torch.rand(rows, generator=generator, device=generator.device)
    p_mask = ((1 - eps) * t + eps)[:, None].expand(rows, length)
    uniforms = torch.rand(rows, length, generator=generator, device=generator.device)
    masked = (uniforms < p_mask) & maskable.to(generator.device)
    return masked.to(maskable.device), p_mask.to(maskable.device).contiguous()


def prepare_window(
    window: Sequence[Mapping[str, torch.Tensor]],
    *,
    mask_token_id: int,
    eos_token_id: int | None,
    eps: float = 1e-3,
    generator: torch.Generator,
    vocab_size: int | None = None,
) -> list[dict[str, torch.Tensor | None]]:
    """Noise every microbatch of the window now, in order, and keep the draws for the forward passes."""
    validate_window(window, mask_token_id=mask_token_id, vocab_size=vocab_size, eps=eps)
    noised = []
    for batch in window:
        model_ids, targets, maskable, run_mask = apply_eos_padding(batch, eos_token_id)
        masked, p_mask = draw_masks(maskable, eps, generator)
        noised.append(
            dict(input_ids=model_ids, labels=targets, masked_indices=masked, p_mask=p_mask, attention_mask=run_mask)
        )
    return noised
