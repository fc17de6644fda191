"""The causal-LM oracle (oracle/causal_lm.py, docs/causal-lm.md, The window rule) against transformers' own loss,
and a GPT dataset's sample as a row (parity/training/causal/gpt_rows.py)."""

from __future__ import annotations

from dataclasses import replace

import torch
import torch.nn.functional as F

from oracle.causal_lm import (
    IGNORE_INDEX,
    Document,
    Row,
    batched_sum,
    document_sum,
    seeded,
    tiny_causal_lm,
    window_count,
    window_loss,
)
from oracle.gpt_dataset import OracleGPTDataset
from parity.strategies.dataset import UPSTREAM_PR_CASE
from parity.training.causal.gpt_rows import sample_row
from tests.causal.loops import CumulativeLM

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
    assert float(empty.detach()) == 0.0 and all(p.grad is not None for p in model.parameters())


def test_a_packed_microbatch_in_one_padded_forward_is_its_documents_apart():
    """What a packed forward must equal (restarting positions, a block-diagonal causal mask, rows right-padded):
    ``batched_sum``, the reference that gives the budget a trainer's kernel shapes, is the per-document sum."""
    model = tiny_causal_lm(1, torch.float64)
    other = Document((13, 14, 15, 16), (13, 14, IGNORE_INDEX, 16))
    microbatch = [Row((ANSWER, other)), Row((other,)), Row((PROMPT_ONLY,))]
    separate = sum(document_sum(model, d) for row in microbatch for d in row.documents)
    assert torch.allclose(batched_sum(model, microbatch).detach(), separate.detach(), rtol=1e-12)


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


def test_any_causal_model_is_judged_by_the_same_rule_and_its_batched_reference_is_its_own_sum():
    """A model of another class (a library's; here tests/causal/loops.py's) is called as ``model(ids)``: the golden's per-document sum, and the
    budget's batched reference (each document a row, right-padded) equal to it."""
    model = seeded(CumulativeLM(), 3, torch.float64)
    # the same weights in every dtype: the float32 model's are the float64 model's, rounded
    assert torch.equal(seeded(CumulativeLM(), 3, torch.float32).head.weight, model.head.weight.float())
    microbatch = [Row((ANSWER,)), Row((PROMPT_ONLY, ANSWER))]
    separate = sum(document_sum(model, d) for row in microbatch for d in row.documents)
    assert torch.allclose(batched_sum(model, microbatch).detach(), separate.detach(), rtol=1e-12)
    expected = F.cross_entropy(model(torch.tensor([ANSWER.ids]))[0, :-1], torch.tensor(ANSWER.labels[1:]),
                               ignore_index=-100, reduction="sum")
    assert torch.allclose(document_sum(model, ANSWER).detach(), expected.detach(), rtol=1e-12)
