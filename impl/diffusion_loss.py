"""Window-normalised masked-diffusion loss: each microbatch contributes ``S_g / N`` (docs/diffusion-model.md).

``N`` counts the masked tokens actually realized in the whole accumulation window, gathered over
the data-parallel ranks unless the user asked for rank-local normalisation. Gathering multiplies the
loss by the world size, which DDP's gradient averaging then undoes. The loss is already scaled for
accumulation, so a trainer must not divide it again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import torch
import torch.distributed as dist
from torch import nn

from impl import diffusion_noise


@dataclass(frozen=True)
class WindowCount:
    """The denominator of a window and the factor that undoes DDP's averaging."""

    num_items: torch.Tensor
    loss_scale: int = 1


class WindowedDiffusionLoss:
    """The production loss; an instance holds no state, so one module-level object serves all."""

    loss_is_scaled_for_ga = True

    def prepare_window(self, window, *, mask_token_id, eos_token_id, eps=1e-3, generator, vocab_size=None):
        return diffusion_noise.prepare_window(
            window,
            mask_token_id=mask_token_id,
            eos_token_id=eos_token_id,
            eps=eps,
            generator=generator,
            vocab_size=vocab_size,
        )

    def window_count(
        self,
        window: Sequence[Mapping[str, torch.Tensor | None]],
        *,
        average_tokens_across_devices: bool = True,
        group=None,
    ) -> WindowCount:
        if len(window) == 0:
            raise ValueError("window: an accumulation window must hold at least one microbatch")
        local = sum(batch["masked_indices"].sum() for batch in window)
        scale = self.loss_scale(average_tokens_across_devices=average_tokens_across_devices, group=group)
        if scale == 1:
            return WindowCount(local)
        gathered = local.clone()
        dist.all_reduce(gathered, op=dist.ReduceOp.SUM, group=group)
        return WindowCount(gathered, loss_scale=scale)

    @staticmethod
    def loss_scale(*, average_tokens_across_devices: bool = True, group=None) -> int:
        """The world size when counts are gathered over ranks (to undo DDP's averaging), else 1."""
        if not (average_tokens_across_devices and dist.is_available() and dist.is_initialized()):
            return 1
        return dist.get_world_size(group)

    def microbatch_loss(
        self, model: nn.Module, noised: Mapping[str, torch.Tensor | None], count: WindowCount | None = None
    ) -> torch.Tensor:
        """``S_g * scale / max(N, 1)``; without a window count, the microbatch's own count (evaluation)."""
        # The published contract: a ModelOutput whose ``loss`` is ``(sum_loss, num_mask_tokens)``.
        sum_loss, num_mask_tokens = model(**noised).loss
        if count is None:
            return sum_loss / num_mask_tokens.clamp(min=1)
        return sum_loss * count.loss_scale / count.num_items.to(sum_loss.device).clamp(min=1)


WINDOWED_LOSS = WindowedDiffusionLoss()
