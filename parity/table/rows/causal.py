"""Causal-LM training, the report's ``causal-lm`` scenario (docs/causal-lm.md)."""

from __future__ import annotations

from hypothesis import strategies as st

import parity.table.rows.lazy as lazy
from parity.cases import CAUSAL_DTYPES
from parity.table.record import Property
from parity.table.run_budget import WHOLE_RUN_SHRINK_RUNS

CAUSAL: tuple[Property, ...] = (
    # --- causal-LM training (docs/causal-lm.md): the report's ``causal-lm`` scenario ---
    Property(
        name="causal/trainer-follows-the-window",
        interface="causal_trainer",
        check="parity.table.checks.causal:check_causal_trainer",
        arguments=lambda: {"case": lazy.causal().causal_cases()},
        examples=lambda: [{"case": case} for case in lazy.causal().CAUSAL_CORNERS],
        catches=("known-bug:causal-local-mean",),
        hunted=True,  # bench hunts its known bug from the bare strategies (docs/benchmarks.md)
        xdist_group="distributed",  # its two-rank corners read the one launch the distributed tests read
        examples_fraction=0.1,  # each example is a whole Trainer run
        whole_run=True,  # unshrunk outside nightly; there within its shrink budget (docs/budget.md, Bounded failure cost)
        shrink_runs=WHOLE_RUN_SHRINK_RUNS,
        scenario="causal-lm",
        dtypes=CAUSAL_DTYPES,  # --dtype: every case in it (the report's causal-lm scenario)
    ),
    Property(
        name="causal/loop-follows-the-window",
        interface="loop",
        check="parity.table.checks.causal:check_causal_loop",
        arguments=lambda: {"case": lazy.causal().causal_cases()},
        examples=lambda: [{"case": case} for case in lazy.causal().CAUSAL_CORNERS],
        catches=("megatron-schedule",),
        hunted=True,  # bench hunts its known bug from the bare strategies (docs/benchmarks.md)
        xdist_group="distributed",  # its two-rank corners read the one launch the distributed tests read
        examples_fraction=0.1,  # each example is a whole run of the loop
        whole_run=True,
        shrink_runs=WHOLE_RUN_SHRINK_RUNS,
        scenario="causal-lm",
        dtypes=CAUSAL_DTYPES,  # --dtype: every case in it (the report's causal-lm scenario)
    ),
    Property(
        name="causal/dataset-feeds-a-run",
        interface="dataset",
        check="parity.table.checks.causal:check_dataset_feeds_a_causal_run",
        arguments=lambda: {"case": lazy.dataset().small_dataset_cases,
                           "causal": st.sampled_from(lazy.causal().DATASET_FED_RUNS)},
        examples=lambda: lazy.causal().dataset_fed_examples(),
        catches=lazy.CACHE_BUGS,
        examples_fraction=0.04,  # a whole Trainer run each: the upstream trigger and a split sample, then one draw
        scenario="causal-lm",
        dtypes=CAUSAL_DTYPES,  # --dtype: every case in it (the report's causal-lm scenario)
    ),
)
