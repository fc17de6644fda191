"""The harness's stand-in for NVIDIA's remote code, written for this repository (not NVIDIA's code).

It has the published layout and contract: a relatively imported backbone run in diffusion mode (the
attention mask ignored), an untied ``diffusion_head``, clean ids in, and a ``ModelOutput`` whose
``loss`` is ``(sum_loss, num_mask_tokens)`` with 1/p weighting, plus ``logits``. It also has the
published surface beyond that contract, so that a caller leaning on what only the built-in model
has fails here, in the default run: the class derives from the backbone's pre-trained base (whose
``base_model_prefix`` names no attribute, so ``base_model`` is the whole model), its output carries
the published fields and no hidden states, and the hidden states come only through the published
``output_last_hidden_states_only=True``.
"""

import copy
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from transformers import Ministral3PreTrainedModel
from transformers.modeling_outputs import BaseModelOutput
from transformers.utils import ModelOutput

from .configuration_nemotron_standin import NemotronStandinConfig
from .modeling_standin_backbone import StandinBackbone


@dataclass
class NemotronStandinOutputWithPast(ModelOutput):
    """The published output's fields, ``past_key_values`` among them, handed by keyword as published: what
    transformers 5.24 breaks and the loader's shim mends (docs/diffusion-model.md, transformers versions)."""

    loss: tuple | None = None
    logits: torch.Tensor | None = None
    past_key_values: tuple | None = None
    causal_logits: torch.Tensor | None = None
    hidden_states: tuple | None = None
    attentions: tuple | None = None


class NemotronStandinModel(Ministral3PreTrainedModel):
    config_class = NemotronStandinConfig

    def __init__(self, config):
        super().__init__(config)
        self.mask_token_id = config.mask_token_id
        backbone_config = copy.deepcopy(config)
        backbone_config.diffusion_lm = config.dlm_paradigm == "bidirectional"
        self.encoder = StandinBackbone(backbone_config)
        self.diffusion_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.post_init()

    def get_input_embeddings(self):
        return self.encoder.embed_tokens

    def get_output_embeddings(self):
        return self.diffusion_head

    def forward_process(self, input_ids, eps=1e-3, loss_mask=None):
        rows, length = input_ids.shape
        t = torch.rand(rows, device=input_ids.device)
        p_mask = ((1 - eps) * t + eps)[:, None].expand(-1, length)
        masked_indices = torch.rand((rows, length), device=input_ids.device) < p_mask
        if loss_mask is not None:
            masked_indices[loss_mask == 0] = False
        return torch.where(masked_indices, self.mask_token_id, input_ids), masked_indices, p_mask

    def forward(
        self,
        input_ids,
        attention_mask=None,
        position_ids=None,
        labels=None,
        eps=1e-3,
        masked_indices=None,
        p_mask=None,
        loss_mask=None,
        output_last_hidden_states_only=False,
        **kwargs,
    ):
        noisy = input_ids
        if labels is not None:
            if masked_indices is None:
                noisy, masked_indices, p_mask = self.forward_process(input_ids, eps=eps, loss_mask=loss_mask)
            else:
                if loss_mask is not None:
                    masked_indices[loss_mask == 0] = False
                noisy = torch.where(masked_indices, self.mask_token_id, input_ids)
        encoded = self.encoder(input_ids=noisy, attention_mask=attention_mask, position_ids=position_ids, **kwargs)
        if output_last_hidden_states_only:
            return BaseModelOutput(last_hidden_state=encoded.last_hidden_state)
        logits = self.diffusion_head(encoded.last_hidden_state)
        loss = None
        if labels is not None:
            token_loss = F.cross_entropy(logits[masked_indices], labels[masked_indices], reduction="none")
            summed = (token_loss / p_mask[masked_indices]).sum()
            if self.config.dlm_loss_weight is not None:
                summed = self.config.dlm_loss_weight * summed
            loss = (summed, masked_indices.sum())
        return NemotronStandinOutputWithPast(loss=loss, logits=logits, past_key_values=None)  # no cache in diffusion mode
