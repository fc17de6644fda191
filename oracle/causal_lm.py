"""The causal-LM window rule, written to be read (docs/causal-lm.md).

One optimizer step follows the gradient of

    L* = sum over every rank, microbatch, row and document of the next-token cross-entropy
         on its supervised positions  /  max(N, 1)

with ``N`` the number of supervised positions *after the shift* over the whole accumulation window and every
rank. A position is supervised when the label of the token it predicts is not -100; the first label of a document
is never a target, since nothing precedes it. A packed row is its documents side by side: each is run on its own
here (its positions restart, nothing attends across), which is what a packed forward with restarting
``position_ids`` and document masking must equal.

Nothing is accumulated, rescaled or averaged: every document's summed loss is added up, divided once, and one
backward pass gives the gradients; then plain SGD. With ``average_tokens_across_devices=False`` the rule is
transformers' documented one instead: each rank's sum over its own count, the ranks averaged. Rows hold plain lists, so no production collator, packer or
shift stands between the rows and this arithmetic.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedModel

from oracle.window_reference import StepResult, apply_sgd

IGNORE_INDEX = -100

#: The tiny causal LM every causal-LM run trains: a Llama of two layers, eager attention (the one every release and
#: every device computes the same way), an untied head.
TINY_CAUSAL_CONFIG = dict(
    vocab_size=32, hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=2,
    num_key_value_heads=1, max_position_embeddings=64, tie_word_embeddings=False, bos_token_id=1, eos_token_id=2,
    pad_token_id=0,
)


def seeded(model: nn.Module, seed: int, dtype: torch.dtype) -> nn.Module:
    """``model`` with every parameter drawn from ``seed`` in float64, in the order the model lists them, then cast to
    ``dtype``: the same weights in every dtype, and for any model class (a library's own included)."""
    with torch.no_grad():
        generator = torch.Generator().manual_seed(seed)
        for parameter in model.parameters():
            parameter.copy_(torch.randn(parameter.shape, generator=generator, dtype=torch.float64) * 0.5)
    return model.to(dtype)


def tiny_causal_lm(seed: int = 0, dtype: torch.dtype = torch.float32) -> LlamaForCausalLM:
    """The tiny causal LM with weights drawn from ``seed`` (the same weights in every dtype)."""
    torch.manual_seed(seed)
    config = LlamaConfig(**TINY_CAUSAL_CONFIG)
    config._attn_implementation = "eager"
    return seeded(LlamaForCausalLM(config), seed, dtype)


def next_token_logits(model: nn.Module, ids: torch.Tensor) -> torch.Tensor:
    """Any causal LM's logits for a batch of ``ids`` run from position 0, each row attending to its earlier tokens
    only: a transformers model's output's ``.logits``; a library's own model (litgpt's ``GPT``, torchtune's
    ``TransformerDecoder``) returns the tensor itself."""
    output = model(ids)
    return getattr(output, "logits", output)


@dataclass(frozen=True)
class Document:
    """One document: its token ids and, aligned with them, its labels (-100 where nothing is supervised)."""

    ids: tuple[int, ...]
    labels: tuple[int, ...]

    def __post_init__(self):
        if len(self.ids) != len(self.labels) or not self.ids:
            raise ValueError(f"a document needs as many labels as ids, and at least one id: {self}")

    @property
    def supervised(self) -> int:
        """The positions whose next token is a target: the labels after the first that are not -100."""
        return sum(label != IGNORE_INDEX for label in self.labels[1:])


@dataclass(frozen=True)
class Row:
    """One row of a microbatch: a single document, or several packed side by side."""

    documents: tuple[Document, ...]

    @property
    def supervised(self) -> int:
        return sum(document.supervised for document in self.documents)


def document_sum(model: nn.Module, document: Document) -> torch.Tensor:
    """The summed next-token cross-entropy over the document's supervised positions, the document alone."""
    device = next(model.parameters()).device
    ids = torch.tensor([document.ids], device=device)
    logits = next_token_logits(model, ids)[0]
    return _supervised_sum(logits[:-1], torch.tensor(document.labels[1:], device=device))


def window_count(ranks: Sequence[Sequence[Sequence[Row]]]) -> int:
    """``N``: the supervised positions after the shift, over every rank's every microbatch."""
    return sum(row.supervised for microbatches in ranks for microbatch in microbatches for row in microbatch)


def batched_sum(model: nn.Module, microbatch: Sequence[Row]) -> torch.Tensor:
    """The same sum as :func:`document_sum` over the microbatch's documents, in one forward: the arithmetic is the
    window rule's; only the kernels' shapes, hence their rounding, differ (a reference the budget is derived from,
    never the golden). A transformers model runs it as trainers do (:func:`packed_rows_sum`); any other model, whose
    call takes ids alone, with each document a row of its own (:func:`document_rows_sum`)."""
    if isinstance(model, PreTrainedModel):
        return packed_rows_sum(model, microbatch)
    return document_rows_sum(model, microbatch)


def _supervised_sum(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """The summed cross-entropy of ``logits`` at the positions whose target is supervised, in float64."""
    supervised = targets != IGNORE_INDEX
    if not bool(supervised.any()):
        return logits.sum() * 0.0  # a path to every parameter the logits depend on, valued zero
    return F.cross_entropy(logits[supervised].to(torch.float64), targets[supervised], reduction="sum")


def document_rows_sum(model: nn.Module, microbatch: Sequence[Row]) -> torch.Tensor:
    """Every document of the microbatch a row of its own, right-padded (a causal forward never reads a later
    position, so the padding changes no earlier logit), in one forward."""
    device = next(model.parameters()).device
    documents = [document for row in microbatch for document in row.documents]
    length = max(len(document.ids) for document in documents)
    ids = torch.zeros(len(documents), length, dtype=torch.long)
    targets = torch.full((len(documents), length), IGNORE_INDEX)
    for d, document in enumerate(documents):
        ids[d, : len(document.ids)] = torch.tensor(document.ids)
        targets[d, : len(document.ids) - 1] = torch.tensor(document.labels[1:])  # position i predicts label i + 1
    return _supervised_sum(next_token_logits(model, ids.to(device)), targets.to(device))


def packed_rows_sum(model: PreTrainedModel, microbatch: Sequence[Row]) -> torch.Tensor:
    """Every row one sequence of its documents side by side (positions restarting, a block-diagonal causal mask
    keeping them apart), the rows right-padded into one forward, as a trainer runs a transformers model."""
    device = next(model.parameters()).device
    length = max(sum(len(d.ids) for d in row.documents) for row in microbatch)
    ids = torch.zeros(len(microbatch), length, dtype=torch.long)
    positions = torch.zeros(len(microbatch), length, dtype=torch.long)
    targets = torch.full((len(microbatch), length), IGNORE_INDEX)
    allowed = torch.zeros(len(microbatch), length, length, dtype=torch.bool)
    for r, row in enumerate(microbatch):
        start = 0
        for document in row.documents:
            end = start + len(document.ids)
            ids[r, start:end] = torch.tensor(document.ids)
            positions[r, start:end] = torch.arange(len(document.ids))
            targets[r, start:end - 1] = torch.tensor(document.labels[1:])  # position i predicts label i + 1
            allowed[r, start:end, start:end] = torch.tril(torch.ones(end - start, end - start, dtype=torch.bool))
            start = end
        allowed[r, start:, start:] = torch.eye(length - start, dtype=torch.bool)  # padding sees itself only
    dtype = next(model.parameters()).dtype
    mask = torch.zeros(allowed.shape, dtype=dtype).masked_fill(~allowed, torch.finfo(dtype).min)[:, None]
    logits = model(input_ids=ids.to(device), position_ids=positions.to(device), attention_mask=mask.to(device),
                   use_cache=False).logits
    return _supervised_sum(logits, targets.to(device))


def window_loss(model: nn.Module, ranks: Sequence[Sequence[Sequence[Row]]], rank_local: bool = False,
                batched: bool = False) -> torch.Tensor:
    """``L*``: ``ranks[r][g]`` is microbatch ``g`` of rank ``r``, a list of rows. ``rank_local``: each rank's sum over
    its own count, the ranks averaged (``average_tokens_across_devices=False``). ``batched``: each microbatch in one
    padded forward (:func:`batched_sum`)."""

    def rank_sum(microbatches) -> torch.Tensor:
        if batched:
            return sum(batched_sum(model, microbatch) for microbatch in microbatches)
        return sum(document_sum(model, document) for microbatch in microbatches for row in microbatch
                   for document in row.documents)

    if rank_local:
        return sum(rank_sum(microbatches) / max(window_count([microbatches]), 1) for microbatches in ranks) / len(ranks)
    return sum(rank_sum(microbatches) for microbatches in ranks) / max(window_count(ranks), 1)


def window_step(model: nn.Module, ranks: Sequence[Sequence[Sequence[Row]]], lr: float, rank_local: bool = False,
                batched: bool = False) -> StepResult:
    """One window: its loss, one backward, then plain SGD (``p <- p - lr * grad``)."""
    model.zero_grad(set_to_none=True)
    loss = window_loss(model, ranks, rank_local, batched)
    loss.backward()
    return apply_sgd(model, loss, lr)
