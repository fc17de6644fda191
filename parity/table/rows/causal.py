"""Causal-LM training, the report's ``causal-lm`` scenario (docs/causal-lm.md)."""

from __future__ import annotations

from hypothesis import strategies as st

import parity.table.rows.lazy as lazy
from parity.table.record import Property

CAUSAL: tuple[Property, ...] = (
    # --- causal-LM training (docs/causal-lm.md): the report's ``causal-lm`` scenario ---
    Property(
        name="causal/trainer-follows-the-window",
        interface="causal_trainer",
        check="parity.table.checks.causal:check_causal_trainer",
        arguments=lambda: {"case": lazy.causal().causal_cases()},
        examples=lambda: [{"case": case} for case in lazy.causal().CAUSAL_CORNERS if case.world_size == 1],
        catches=("known-bug:causal-local-mean",),
        examples_fraction=0.1,  # each example is a whole Trainer run
        scenario="causal-lm",
    ),
    Property(
        name="causal/loop-follows-the-window",
        interface="loop",
        check="parity.table.checks.causal:check_causal_loop",
        arguments=lambda: {"case": lazy.causal().causal_cases()},
        examples=lambda: [{"case": case} for case in lazy.causal().CAUSAL_CORNERS if case.world_size == 1],
        catches=("megatron-schedule",),
        examples_fraction=0.1,
        scenario="causal-lm",
    ),
    Property(
        name="causal/dataset-feeds-a-run",
        interface="dataset",
        check="parity.table.checks.causal:check_dataset_feeds_a_causal_run",
        arguments=lambda: {"case": lazy.dataset().small_dataset_cases, "causal": st.just(lazy.causal().DATASET_FED_RUN)},
        examples=lambda: [{"case": lazy.dataset().UPSTREAM_PR_CASE, "causal": lazy.causal().DATASET_FED_RUN}],
        catches=lazy.CACHE_BUGS,
        examples_fraction=0.04,  # a whole Trainer run each: the upstream trigger, then one draw
        scenario="causal-lm",
    ),
)
