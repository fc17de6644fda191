"""The tiny Nemotron-Labs-Diffusion model, its noising and its masking rule (docs/diffusion-model.md).

The encoder is transformers' own, unmodified ``Ministral3Model`` run in diffusion mode (bidirectional,
no attention mask); the diffusion head is an untied linear layer. ``forward`` keeps the published
contract: a ``ModelOutput`` whose ``loss`` is ``(sum_loss, num_mask_tokens)``, leaving the
normalisation to whoever holds the global count, and whose ``logits`` are the head's output.
Written to be read, not to be fast; it imports nothing from ``impl`` or ``parity``.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from huggingface_hub.dataclasses import strict
from torch import nn
from transformers import Ministral3Config, Ministral3Model, PreTrainedModel
from transformers.modeling_outputs import BaseModelOutput
from transformers.utils import ModelOutput

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
    """``Ministral3Config`` plus the diffusion extras of the published config.

    Like the published config it has no ``is_causal``: bidirectionality belongs to the encoder's
    diffusion mode (see ``NemotronLabsDiffusionModel``), not to the config a user writes.
    """

    model_type = "nemotron_labs_diffusion"
    mask_token_id: int = 100
    dlm_paradigm: str = "bidirectional"
    block_size: int = 32
    dlm_loss_weight: float | None = None
    ar_loss_weight: float = 1.0
    dp_varying_mask_ratio: bool = False


@dataclass
class NemotronLabsDiffusionOutput(ModelOutput):
    """What the published ``forward`` returns: ``loss`` is the pair ``(sum_loss, num_mask_tokens)``
    when labels are given (None otherwise), ``logits`` always."""

    loss: tuple[torch.Tensor, torch.Tensor] | None = None
    logits: torch.Tensor | None = None


class NemotronLabsDiffusionModel(PreTrainedModel):
    """Encoder in diffusion mode plus an untied diffusion head, with the published ``forward``.

    Diffusion mode (docs/diffusion-model.md, "Bidirectionality"): the encoder attends every position
    from every position and never sees an attention mask, so a padding mask passed to ``forward`` is
    accepted and changes nothing, exactly as in the published model.
    """

    config_class = NemotronLabsDiffusionConfig
    base_model_prefix = "encoder"
    _supports_sdpa = True

    def __init__(self, config: NemotronLabsDiffusionConfig):
        super().__init__(config)
        if config.dlm_paradigm != "bidirectional":
            raise ValueError(f"only the bidirectional paradigm is modelled here, got {config.dlm_paradigm!r}")
        self.mask_token_id = config.mask_token_id
        # The encoder's own copy of the config is the diffusion-mode one; the user's config stays as published.
        diffusion_config = copy.deepcopy(config)
        diffusion_config.is_causal = False
        self.encoder = Ministral3Model(diffusion_config)
        self.diffusion_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.post_init()

    def get_input_embeddings(self) -> nn.Embedding:
        return self.encoder.embed_tokens

    def set_input_embeddings(self, value: nn.Embedding) -> None:
        self.encoder.embed_tokens = value

    def get_output_embeddings(self) -> nn.Linear:
        return self.diffusion_head

    def set_output_embeddings(self, new_embeddings: nn.Linear) -> None:
        self.diffusion_head = new_embeddings

    def forward_process(self, input_ids: torch.Tensor, eps: float = 1e-3, loss_mask: torch.Tensor | None = None):
        """The published noising: draws from the global RNG on the input's device (no generator)."""
        return forward_process(input_ids, self.mask_token_id, eps=eps, loss_mask=loss_mask, device=input_ids.device)

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        eps: float = 1e-3,
        masked_indices: torch.Tensor | None = None,
        p_mask: torch.Tensor | None = None,
        loss_mask: torch.Tensor | None = None,
        output_last_hidden_states_only: bool = False,
        **kwargs,
    ) -> NemotronLabsDiffusionOutput | BaseModelOutput:
        """Clean ids in; with labels the ids are noised here (from ``masked_indices`` when given).

        ``attention_mask`` is accepted and dropped (diffusion mode). ``loss_mask == 0`` clears
        ``masked_indices`` in place, as the published model does. Extra keywords go to the encoder.
        ``output_last_hidden_states_only=True`` returns the encoder's last hidden states alone, as a
        ``BaseModelOutput`` (the published way to them, for a caller that applies the head itself).
        """
        del attention_mask  # diffusion mode: no mask reaches the attention
        noisy = input_ids
        if labels is not None:
            if masked_indices is not None:
                if loss_mask is not None:
                    masked_indices[loss_mask == 0] = False
                noisy = torch.where(masked_indices, self.mask_token_id, input_ids)
            else:
                noisy, masked_indices, p_mask = self.forward_process(input_ids, eps=eps, loss_mask=loss_mask)
        hidden = self.encoder(input_ids=noisy, position_ids=position_ids, **kwargs).last_hidden_state
        if output_last_hidden_states_only:
            return BaseModelOutput(last_hidden_state=hidden)
        logits = self.diffusion_head(hidden)
        loss = None
        if labels is not None:
            # 1/p-weighted cross entropy on the masked positions, summed; the caller normalises.
            token_loss = F.cross_entropy(logits[masked_indices], labels[masked_indices], reduction="none")
            token_loss = token_loss / p_mask[masked_indices]
            sum_loss = token_loss.sum()
            if self.config.dlm_loss_weight is not None:
                sum_loss = self.config.dlm_loss_weight * sum_loss
            loss = (sum_loss, masked_indices.sum())
        return NemotronLabsDiffusionOutput(loss=loss, logits=logits)


def forward_process(
    input_ids: torch.Tensor,
    mask_token_id: int,
    eps: float = 1e-3,
    loss_mask: torch.Tensor | None = None,
    generator: torch.Generator | None = None,
    device: torch.device | str | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Mask each token with probability ``p = (1 - eps) t + eps``, ``t ~ U(0, 1)`` per row.

    Draw order is part of the contract: every row's ``t`` first, then the per-token uniforms. The
    draws are made on the generator's device when one is given (the harness's reproducible draws),
    else from the global RNG on ``device`` (the CPU by default; the model passes the input's device,
    as the published model does). Returns ``(noisy_ids, masked_indices, p_mask)``.
    """
    rows, length = input_ids.shape
    if generator is not None:
        draw_device = generator.device
    else:
        draw_device = torch.device("cpu") if device is None else torch.device(device)
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
    """What the model sees and which positions may be masked (docs/diffusion-model.md, "The EOS rule"), one row at a time.

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
