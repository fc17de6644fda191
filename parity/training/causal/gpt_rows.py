"""A GPT dataset's sample as a causal-LM row (docs/causal-lm.md, The dataset feeds the run).

megatron's samples are already shifted: ``tokens[i]`` predicts ``labels[i]`` where ``loss_mask[i]`` is 1. The same
sample in transformers' convention (the shift inside the loss) is the ids ``tokens + [labels[-1]]`` with the
labels ``[-100] + [labels[i] if loss_mask[i] else -100]``: so the dataset's loss mask *is* the run's count, and a
wrong mask is a wrong count. With ``reset_attention_mask`` the row is its documents apart (split after each EOD),
as the dataset's attention mask keeps them, each ending on the id its last token predicts (an EOD predicts the
next document's first token, which megatron supervises); without it, one document that attends across EODs.
"""

from __future__ import annotations

from oracle.causal_lm import IGNORE_INDEX, Document, Row


class UnsupportedSampleConfig(ValueError):
    """A dataset config the causal-LM row cannot express."""


def sample_row(sample, config) -> Row:
    """``sample`` (``tokens``, ``labels``, ``loss_mask``) as a row of documents, in the oracle's convention."""
    if config.reset_position_ids != config.reset_attention_mask:
        raise UnsupportedSampleConfig(
            "reset_position_ids and reset_attention_mask must agree for a causal-LM row (documents apart, positions "
            f"restarting, or neither); got {config.reset_position_ids} and {config.reset_attention_mask}")
    tokens = [int(t) for t in sample["tokens"]]
    labels = [int(t) for t in sample["labels"]]
    mask = [float(m) for m in sample["loss_mask"]]
    ids = [*tokens, labels[-1]]
    targets = [IGNORE_INDEX, *(label if kept else IGNORE_INDEX for label, kept in zip(labels, mask, strict=True))]
    starts = [0]
    if config.reset_attention_mask:  # a new document after each EOD input token
        starts += [i + 1 for i, token in enumerate(tokens) if token == config.eod_id and i + 1 < len(tokens)]
    documents = []
    for start, end in zip(starts, [*starts[1:], len(tokens)], strict=True):
        # up to and including the id the document's last token predicts (the next document's first, across an EOD)
        documents.append(Document(tuple(ids[start:end + 1]), (IGNORE_INDEX, *targets[start + 1:end + 1])))
    return Row(tuple(documents))
