"""What a whole training run draws: rows, windows, lengths, seeds, eps, normalisation, evaluation."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import strategies as st

from parity.devices import DTYPES
from parity.trainer_run import PUBLISHED_EPS, TrainerCase, declares_eps

#: eps values that matter: the published floor, a middling one, and one where p is never small.
EPS = st.sampled_from([PUBLISHED_EPS, 0.05, 0.5, 1.0]) | st.floats(1e-3, 1.0)


@st.composite
def trainer_cases(draw, dtypes=DTYPES) -> TrainerCase:
    rows = draw(st.integers(1, 6))
    return TrainerCase(
        examples_per_rank=rows,
        window_size=draw(st.integers(1, 3)),
        max_length=draw(st.integers(2, 10)),
        data_seed=draw(st.integers(0, 2**16)),
        noise_seed=draw(st.integers(0, 2**16)),
        model_seed=draw(st.integers(0, 3)),
        dtype=draw(st.sampled_from(dtypes)),
        average_tokens_across_devices=draw(st.booleans()),
        evaluate=draw(st.booleans()),
        eval_batch_size=draw(st.integers(0, rows)),
        eps=draw(EPS),
    )


#: The pull request's run: 5 examples, micro-batch 1, accumulation 2 (windows 2, 2, 1), plain SGD.
UPSTREAM_RUN = TrainerCase(eval_batch_size=2)
#: Three-microbatch windows at eps 0.5, rank-local normalisation, evaluation one row at a time.
RANK_LOCAL_RUN = TrainerCase(window_size=3, eps=0.5, average_tokens_across_devices=False, eval_batch_size=1)


def for_trainer(case: TrainerCase, trainer_class) -> TrainerCase:
    """A trainer that declares no ``eps`` runs at the published one (docs/trainer.md)."""
    return case if declares_eps(trainer_class) else replace(case, eps=PUBLISHED_EPS)
