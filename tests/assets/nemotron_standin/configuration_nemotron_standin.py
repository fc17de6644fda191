"""Configuration of the harness's stand-in for NVIDIA's remote code (written for this repository).

Shaped like the published configuration module: the backbone's fields plus the diffusion extras,
and no ``is_causal`` (bidirectionality is the model's diffusion mode, not a config field).
"""

from huggingface_hub.dataclasses import strict
from transformers import Ministral3Config


@strict
class NemotronStandinConfig(Ministral3Config):
    model_type = "nemotron_standin"
    mask_token_id: int = 100
    dlm_paradigm: str = "bidirectional"
    block_size: int = 32
    dlm_loss_weight: float | None = None
    ar_loss_weight: float = 1.0
    dp_varying_mask_ratio: bool = False
