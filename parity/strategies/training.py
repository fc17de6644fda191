"""What a whole training run draws: the declared case space of ``parity.cases``, through Hypothesis."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from hypothesis import event
from hypothesis import strategies as st

from parity.cases import LOSS_SCALED_EPS, PUBLISHED_EPS, TrainerCase
from parity.devices import TRAINER_DTYPES
from parity.trainer_space import PUBLISHED_EPS_DOMAIN, EpsDomain, draw_trainer_case


class _HypothesisDraws:
    """``parity.trainer_space.Draws`` over Hypothesis's ``draw``: every choice shrinks."""

    def __init__(self, draw):
        self._draw = draw

    def integer(self, low: int, high: int) -> int:
        return self._draw(st.integers(low, high))

    def choice(self, values: Sequence):
        return self._draw(st.sampled_from(values))

    def boolean(self) -> bool:
        return self._draw(st.booleans())

    def fraction(self, low: float, high: float) -> float:
        return self._draw(st.floats(low, high))

    def label(self, text: str) -> None:
        event(text)


@st.composite
def trainer_cases(draw, dtypes: Sequence[str] = TRAINER_DTYPES, eps_domain: EpsDomain = PUBLISHED_EPS_DOMAIN) -> TrainerCase:
    """One rank's whole run, from the declared space (``parity.trainer_space.draw_trainer_case``): every
    dtype a Trainer may train in; the property rejects float16 on a device that does not scale the
    loss. ``eps_domain``: a trainer's own (the suite's property draws from the published one and runs
    a case outside a trainer's domain at the nearest eps inside it)."""
    return draw_trainer_case(_HypothesisDraws(draw), dtypes=dtypes, eps_domain=eps_domain)


#: The pull request's run: 5 examples, micro-batch 1, accumulation 2 (windows 2, 2, 1), plain SGD.
UPSTREAM_RUN = TrainerCase(eval_batch_size=2)
#: A three-microbatch window of two rows each (rows 1 and 4 all prompt, beside rows with an answer: the
#: EOS rule per row inside a microbatch), rank-local normalisation, evaluation one row at a time, at the
#: published eps, so that every trainer runs it (docs/trainer.md, What the harness reads).
RANK_LOCAL_RUN = TrainerCase(
    window_size=3, eps=PUBLISHED_EPS, average_tokens_across_devices=False, eval_batch_size=1, examples_per_rank=6,
    train_batch_size=2, prompt_only_rows=(1, 4),
)
#: One microbatch of four rows holding every row mix (docs/trainer.md, The EOS rule): a row all prompt and
#: the longest (no padding), one all prompt and padded, one with an answer and the longest, one with an
#: answer and padded (data seed 8 realizes it; tests/quality/test_corner_bugs_are_caught.py checks). The EOS rule is
#: per row: only the padding of a row with an answer is supervised as EOS.
ROW_MIX_RUN = TrainerCase(examples_per_rank=4, window_size=1, train_batch_size=4, max_length=5, prompt_only_rows=(0, 1),
                          data_seed=8, eval_batch_size=4)
#: A first window whose rows are all prompt, so that it masks nothing: its loss is a zero that still backpropagates
#: (docs/trainer.md, Two ranks), the one-rank view of a rank whose window is empty; then a window with answers.
EMPTY_WINDOW_RUN = TrainerCase(examples_per_rank=4, window_size=2, prompt_only_rows=(0, 1), evaluate=False)
#: A production-sized count: one window of two microbatches of eight rows up to 1024 tokens, which masks
#: 4847 tokens, above 2048 (float16's exact integers) and odd (so float16 rounds it): a count kept in a
#: low-precision dtype shows only here (docs/trainer.md, Counts). The tiny model keeps it to seconds.
LARGE_COUNT_RUN = TrainerCase(examples_per_rank=16, window_size=2, max_length=1024, train_batch_size=8, evaluate=False,
                              data_seed=3)
#: The pull request's run as production trains it: TrainingArguments(bf16=True) over float32 weights.
UPSTREAM_RUN_BF16 = replace(UPSTREAM_RUN, dtype="bfloat16", autocast=True)
#: ... and with TrainingArguments(fp16=True), where accelerate scales the loss (CUDA): the first steps
#: are judged, the last one overflows and is skipped (``LOSS_SCALED_EPS``).
UPSTREAM_RUN_FP16 = replace(UPSTREAM_RUN, dtype="float16", autocast=True, eps=LOSS_SCALED_EPS)
#: A correct run under TrainingArguments(bf16=True) whose evaluation losses its parameters' drift moves: one window,
#: evaluation one row at a time. The trained parameters hold their budgets, yet the first prediction_step batch (one
#: masked token) comes out 5.3 % above the golden, 4.2 % of it from the parameters alone: evaluation is judged where
#: the target's parameters are (docs/budget.md, Evaluation after training; issue 56).
DRIFTED_EVAL_RUN_BF16 = TrainerCase(examples_per_rank=4, window_size=2, max_length=3, data_seed=5290, noise_seed=423,
                                    model_seed=2, dtype="bfloat16", autocast=True, eval_batch_size=1, train_batch_size=2)
