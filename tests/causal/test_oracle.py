"""The causal-LM oracle (oracle/causal_lm.py, docs/causal-lm.md, The window rule) against transformers' own loss,
and a GPT dataset's sample as a row (parity/training/causal/gpt_rows.py)."""

from __future__ import annotations

from dataclasses import replace

import torch

from oracle.causal_lm import IGNORE_INDEX, Document, Row, document_sum, tiny_causal_lm, window_count, window_loss
from oracle.gpt_dataset import OracleGPTDataset
from parity.strategies.dataset import UPSTREAM_PR_CASE
from parity.training.causal.gpt_rows import sample_row

ANSWER = Document((5, 6, 7, 8, 9), (IGNORE_INDEX, IGNORE_INDEX, 7, 8, 9))
PROMPT_ONLY = Document((10, 11, 12), (IGNORE_INDEX,) * 3)


def test_a_document_sum_is_transformers_own_shifted_loss_times_its_count():
    model = tiny_causal_lm(0, torch.float64)
    ids, labels = torch.tensor([ANSWER.ids]), torch.tensor([ANSWER.labels])
    mean = model(input_ids=ids, labels=labels).loss  # transformers takes its loss in float32 (logits.float())
    assert torch.allclose(document_sum(model, ANSWER).detach(), mean.detach().double() * ANSWER.supervised, rtol=1e-6)
    assert ANSWER.supervised == 3 and PROMPT_ONLY.supervised == 0


def test_the_window_divides_once_by_every_rank_s_count_after_the_shift():
    model = tiny_causal_lm(0, torch.float64)
    ranks = [[[Row((ANSWER,)), Row((PROMPT_ONLY,))]], [[Row((ANSWER, ANSWER))]]]
    assert window_count(ranks) == 9  # 3, 0 and 3 + 3: the first label of each document is never a target
    assert torch.allclose(window_loss(model, ranks), 3 * document_sum(model, ANSWER) / 9, rtol=1e-12)
    empty = window_loss(model, [[[Row((PROMPT_ONLY,))]]])
    empty.backward()
    assert float(empty) == 0.0 and all(p.grad is not None for p in model.parameters())


def test_a_packed_row_is_its_documents_apart_as_a_packed_forward_with_restarting_positions_and_blocks():
    """What a packed forward must equal: restarting positions and a block-diagonal causal mask."""
    model = tiny_causal_lm(1, torch.float64)
    row = Row((ANSWER, Document((13, 14, 15, 16), (IGNORE_INDEX, 14, IGNORE_INDEX, 16))))
    ids = torch.tensor([[i for d in row.documents for i in d.ids]])
    positions = torch.tensor([[p for d in row.documents for p in range(len(d.ids))]])
    size = ids.shape[1]
    allowed = torch.zeros(size, size, dtype=torch.bool)
    start = 0
    for document in row.documents:
        end = start + len(document.ids)
        allowed[start:end, start:end] = torch.tril(torch.ones(end - start, end - start, dtype=torch.bool))
        start = end
    mask = torch.zeros(1, 1, size, size, dtype=torch.float64).masked_fill(~allowed, torch.finfo(torch.float64).min)
    logits = model(input_ids=ids, position_ids=positions, attention_mask=mask, use_cache=False).logits[0]
    total, start = 0.0, 0
    for document in row.documents:
        end = start + len(document.ids)
        targets = torch.tensor(document.labels[1:])
        kept = targets != IGNORE_INDEX
        total += torch.nn.functional.cross_entropy(logits[start:end - 1][kept], targets[kept], reduction="sum")
        start = end
    assert torch.allclose(total.detach(), sum(document_sum(model, d) for d in row.documents).detach(), rtol=1e-10)


def test_a_gpt_sample_s_loss_mask_is_the_row_s_count_in_either_attention_setting():
    for config in (UPSTREAM_PR_CASE.config, replace(UPSTREAM_PR_CASE.config, reset_attention_mask=True, reset_position_ids=True)):
        dataset = OracleGPTDataset(list(UPSTREAM_PR_CASE.documents), config)
        for k in range(len(dataset)):
            sample = dataset[k]
            row = sample_row(sample, config)
            assert row.supervised == int(sample["loss_mask"].sum())
            tokens = sample["tokens"].tolist()
            cuts = sum(t == config.eod_id for t in tokens[:-1]) if config.reset_attention_mask else 0
            assert len(row.documents) == cuts + 1
            assert [i for d in row.documents for i in d.ids[:-1]] == tokens, "each token an input once"
