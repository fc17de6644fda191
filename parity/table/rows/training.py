"""The training records: the masked-diffusion loss through windows, its noise, and whole trainer runs
(docs/trainer.md)."""

from __future__ import annotations

from hypothesis import strategies as st

import parity.table.rows.lazy as lazy
from parity.devices import DEVICES, DTYPES, TRAINER_DTYPES
from parity.table.record import Property
from parity.table.run_budget import WHOLE_RUN_SHRINK_RUNS, WINDOW_EXAMPLES_FRACTION, WINDOW_SHRINK_RUNS

TRAINING: tuple[Property, ...] = (
    Property(
        name="diffusion/window-parity",
        interface="loss",
        check="parity.table.checks.diffusion:check_window_parity",
        arguments=lambda: {"case": lazy.diffusion().window_cases()},
        # bfloat16 first: a known bug is caught (and the hunt stops) in production's precision.
        examples=lambda: [
            {"case": lazy.diffusion().SEED_SCENARIO_BF16},
            {"case": lazy.diffusion().SEED_SCENARIO},
            *({"case": case} for case in lazy.diffusion().corner_cases()),
            {"case": lazy.diffusion().ROW_MIX_WINDOW},
            {"case": lazy.diffusion().LARGE_COUNT_WINDOW},
        ],
        shrink_runs=WINDOW_SHRINK_RUNS,
        examples_fraction=WINDOW_EXAMPLES_FRACTION,
        devices=DEVICES,
        catches=("known-bug:local-mean",),
        hunted=True,
        dtypes=DTYPES,
    ),
    Property(
        name="diffusion/regrouping",
        interface="loss",
        check="parity.table.checks.diffusion:check_regrouping",
        arguments=lambda: {"case": lazy.diffusion().window_cases(), "rows_per_microbatch": st.integers(1, 4)},
        # The corners where re-cutting can matter: unequal counts in a window of several microbatches; and
        # a correct re-cut whose trajectory drifts over seven steps (docs/budget.md, the trajectory reference).
        examples=lambda: [
            *({"case": case, "rows_per_microbatch": 1 + n % 4}
              for n, case in enumerate(lazy.diffusion().corners_where(a_window_of_unequal_counts=True))),
            {"case": lazy.diffusion().DRIFTING_RUN, "rows_per_microbatch": 1},
        ],
        shrink_runs=WINDOW_SHRINK_RUNS,
        examples_fraction=WINDOW_EXAMPLES_FRACTION,
        devices=DEVICES,
        dtypes=DTYPES,
    ),
    Property(
        # One microbatch per window: local and global means coincide, so every target passes.
        name="diffusion/single-microbatch-control",
        interface="loss",
        check="parity.table.checks.diffusion:check_window_parity",
        arguments=lambda: {"case": lazy.diffusion().window_cases(window_size=1)},
        examples=lambda: [{"case": case} for case in lazy.diffusion().corners_where(microbatches_a_window="one")],
        shrink_runs=WINDOW_SHRINK_RUNS,
        examples_fraction=WINDOW_EXAMPLES_FRACTION,
        devices=DEVICES,
        dtypes=DTYPES,
    ),
    Property(
        name="diffusion/empty-window-is-zero",
        interface="loss",
        check="parity.table.checks.diffusion:check_empty_window_is_a_finite_zero",
        arguments=lambda: {"case": lazy.diffusion().window_cases(empty_first_window=True)},
        examples=lambda: [{"case": case} for case in lazy.diffusion().corners_where(a_window_masks_nothing=True)],
        shrink_runs=WINDOW_SHRINK_RUNS,
        examples_fraction=WINDOW_EXAMPLES_FRACTION,
        devices=DEVICES,
        dtypes=DTYPES,
    ),
    Property(
        name="noise/draws-match-oracle",
        interface="loss",
        check="parity.table.checks.diffusion:check_draws_match_the_oracle",
        arguments=lambda: {"case": lazy.diffusion().window_cases(), "eos": st.sampled_from([lazy.diffusion().EOS, None])},
        examples=lambda: [
            {"case": case, "eos": (lazy.diffusion().EOS, None)[n % 2]} for n, case in enumerate(lazy.diffusion().corner_cases())
        ],
        kind="noise",
        dtypes=DTYPES,
    ),
    Property(
        name="noise/masked-fraction-follows-p",
        interface="loss",
        check="parity.table.checks.diffusion:check_masked_fraction_follows_p",
        arguments=lambda: {
            "seed": st.integers(0, 2**32 - 1),
            "eps": st.sampled_from([1e-3, 0.25]) | st.floats(1e-3, 1.0),
        },
        kind="noise",
    ),
    Property(
        # Trainer.train(), evaluate() and prediction_step end to end, observed from outside.
        name="training/any-run-matches",
        interface="trainer",
        check="parity.table.checks.training:check_training_run",
        arguments=lambda: {"case": lazy.training().trainer_cases()},
        # bfloat16 under autocast first: a known bug is caught (and the hunt stops) in production's precision;
        # float16 under loss scaling where the device has it (the CPU rejects it).
        examples=lambda: [
            {"case": lazy.training().UPSTREAM_RUN_BF16},
            {"case": lazy.training().UPSTREAM_RUN_FP16},
            {"case": lazy.training().EMPTY_WINDOW_RUN},
            {"case": lazy.training().UPSTREAM_RUN},
            {"case": lazy.training().RANK_LOCAL_RUN},
            {"case": lazy.training().ROW_MIX_RUN},
            {"case": lazy.training().LARGE_COUNT_RUN},
            {"case": lazy.training().DRIFTED_EVAL_RUN_BF16},
        ],
        devices=DEVICES,
        catches=("known-bug:local-mean", "known-bug:logits-local-mean"),
        hunted=True,
        shrink_runs=WHOLE_RUN_SHRINK_RUNS,
        examples_fraction=0.3,
        whole_run=True,
        dtypes=TRAINER_DTYPES,
    ),
)
