"""The tiny Nemotron-Labs-Diffusion model, its noising and its masking rule (SPEC §5.1-5.2).

The encoder is transformers' own, unmodified ``Ministral3Model`` attending bidirectionally; the
diffusion head is an untied linear layer. ``forward`` honours the published contract: it returns
``(sum_loss, num_mask_tokens)`` and leaves the normalisation to whoever holds the global count.
Written to be read, not to be fast; it imports nothing from ``impl`` or ``parity``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from huggingface_hub.dataclasses import strict
from torch import nn
from transformers import Ministral3Config, Ministral3Model, PreTrainedModel

IGNORE_INDEX = -100

#: The published 8B config's diffusion ids, kept where they fit the tiny vocabulary.
TINY_CONFIG = dict(
    vocab_size=97,
    hidden_size=32,
    intermediate_size=64,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=8,
    max_position_embeddings=64,
    # YaRN like the published config (factor 16), with the pre-YaRN length consistent with it.
    rope_parameters=dict(
        rope_type="yarn",
        rope_theta=1_000_000.0,
        factor=16.0,
        original_max_position_embeddings=4,
        beta_fast=32.0,
        beta_slow=1.0,
        mscale=1.0,
        mscale_all_dim=1.0,
        llama_4_scaling_beta=0.1,
    ),
    mask_token_id=96,
    eos_token_id=11,
    pad_token_id=11,
    bos_token_id=1,
    tie_word_embeddings=False,
    initializer_range=0.2,
)


@strict
class NemotronLabsDiffusionConfig(Ministral3Config):
    """``Ministral3Config`` plus the diffusion extras of the published config."""

    model_type = "nemotron_labs_diffusion"
    mask_token_id: int = 100
    dlm_paradigm: str = "bidirectional"
    block_size: int = 32
    dlm_loss_weight: float | None = None
    ar_loss_weight: float = 1.0
    dp_varying_mask_ratio: bool = False

    def __post_init__(self, **kwargs):
        # Bidirectional paradigm: no causal mask in diffusion mode.
        self.is_causal = False
        super().__post_init__(**kwargs)


class NemotronLabsDiffusionModel(PreTrainedModel):
    """Encoder plus untied diffusion head; ``forward`` returns ``(sum_loss, num_mask_tokens)``."""

    config_class = NemotronLabsDiffusionConfig
    base_model_prefix = "encoder"
    _supports_sdpa = True

    def __init__(self, config: NemotronLabsDiffusionConfig):
        super().__init__(config)
        self.encoder = Ministral3Model(config)
        self.diffusion_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.post_init()

    def logits(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        hidden = self.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        return self.diffusion_head(hidden)

    def forward(
        self,
        input_ids: torch.Tensor,
        labels: torch.Tensor | None = None,
        masked_indices: torch.Tensor | None = None,
        p_mask: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        eps: float = 1e-3,
        generator: torch.Generator | None = None,
    ):
        """Clean ids in, the mask token placed here; draws the noise itself when none is given."""
        if labels is None:
            return self.logits(input_ids, attention_mask)
        if masked_indices is None:
            _, masked_indices, p_mask = forward_process(
                input_ids, self.config.mask_token_id, eps=eps, generator=generator
            )
        noisy = torch.where(masked_indices, self.config.mask_token_id, input_ids)
        logits = self.logits(noisy, attention_mask)
        token_loss = F.cross_entropy(logits[masked_indices], labels[masked_indices], reduction="none")
        loss = (token_loss / p_mask[masked_indices].to(token_loss.dtype)).sum()
        if self.config.dlm_loss_weight is not None:
            loss = loss * self.config.dlm_loss_weight
        return loss, masked_indices.sum()


def forward_process(
    input_ids: torch.Tensor,
    mask_token_id: int,
    eps: float = 1e-3,
    loss_mask: torch.Tensor | None = None,
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Mask each token with probability ``p = (1 - eps) t + eps``, ``t ~ U(0, 1)`` per row.

    Draw order is part of the contract: every row's ``t`` first, then the per-token uniforms. The
    draws are made on the generator's device (the CPU for a default generator) so the same seed
    gives the same masks whatever device the model runs on.
    """
    rows, length = input_ids.shape
    draw_device = generator.device if generator is not None else torch.device("cpu")
    t = torch.rand(rows, generator=generator, device=draw_device)
    p = (1 - eps) * t + eps
    p_mask = p[:, None].repeat(1, length)
    masked = torch.rand(rows, length, generator=generator, device=draw_device) < p_mask
    if loss_mask is not None:
        masked[loss_mask.to(draw_device) == 0] = False
    masked = masked.to(input_ids.device)
    p_mask = p_mask.to(input_ids.device)
    noisy = torch.where(masked, mask_token_id, input_ids)
    return noisy, masked, p_mask


def eos_padding_rule(
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor | None,
    labels: torch.Tensor | None,
    eos_token_id: int | None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """What the model sees and which positions may be masked (SPEC §5.2), one row at a time.

    Returns ``(model_ids, targets, maskable, run_attention_mask)``.
    """
    model_ids = input_ids.clone()
    targets = input_ids.clone() if labels is None else labels.clone()
    maskable = torch.ones_like(input_ids, dtype=torch.bool)
    for row in range(input_ids.shape[0]):
        for pos in range(input_ids.shape[1]):
            attended = attention_mask is None or bool(attention_mask[row, pos] != 0)
            supervised = labels is None or int(labels[row, pos]) != IGNORE_INDEX
            maskable[row, pos] = attended and supervised
    if attention_mask is None or eos_token_id is None:
        return model_ids, targets, maskable, attention_mask
    for row in range(input_ids.shape[0]):
        has_response = labels is not None and bool(maskable[row].any())
        for pos in range(input_ids.shape[1]):
            if attention_mask[row, pos] == 0:
                model_ids[row, pos] = eos_token_id
                if has_response:
                    targets[row, pos] = eos_token_id
                    maskable[row, pos] = True
    return model_ids, targets, maskable, None


def build_tiny_model(seed: int = 0, dtype: torch.dtype = torch.float32, **overrides) -> NemotronLabsDiffusionModel:
    """The tiny model with seeded weights, built offline; the global RNG is left as it was."""
    config = NemotronLabsDiffusionConfig(**{**TINY_CONFIG, **overrides})
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = NemotronLabsDiffusionModel(config)
    return model.to(dtype)
