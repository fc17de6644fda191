"""The stand-in's backbone, imported relatively by its modeling module as the published layout does.

transformers' own ``Ministral3Model`` with a diffusion-mode switch: when the config it is built from
says ``diffusion_lm``, the attention mask is dropped and attention runs non-causally.
"""

import copy

from transformers import Ministral3Model


class StandinBackbone(Ministral3Model):
    def __init__(self, config):
        self.diffusion_lm = bool(getattr(config, "diffusion_lm", False))
        if self.diffusion_lm:
            config = copy.deepcopy(config)
            config.is_causal = False  # the backbone's own copy: non-causal attention
        super().__init__(config)

    def forward(self, input_ids=None, attention_mask=None, **kwargs):
        if self.diffusion_lm:
            attention_mask = None  # diffusion mode: every position attends every position
        return super().forward(input_ids=input_ids, attention_mask=attention_mask, **kwargs)
