"""The table of properties: one declarative record per property drives every use of it.

In the spirit of PyTorch's OpInfo: a :class:`Property` names its check function, the interface it
needs, the strategies of its arguments, its explicit examples (the upstream triggers), the devices
it runs on and the known bugs it must catch. The pytest suite (:mod:`parity.suite`), the "finds
this bug" checks, ``python -m parity bench`` and the report all read :data:`PROPERTIES`, so adding
a property is one entry (docs/design.md, Properties).

The check is a ``"module:attribute"`` path and the strategies and examples are built by functions,
all loaded when a property is used, so reading the table imports neither torch nor transformers.
A check is called as ``check(interface, **arguments)``, plus
``device=`` and ``target=`` when it takes them; it raises ``AssertionError`` on a counterexample and
may return notes (strings: hazards, precision findings) that accompany a passing verdict.
"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import strategies as st

from parity.devices import DEVICES, DTYPES, TRAINER_DTYPES
from parity.table.record import Property
from parity.table.run_budget import WHOLE_RUN_SHRINK_RUNS, WINDOW_EXAMPLES_FRACTION, WINDOW_SHRINK_RUNS
from parity.targets import Target


def properties_for(target: Target) -> list[Property]:
    return [prop for prop in PROPERTIES if prop.applies_to(target)]


def catching(target_name: str) -> list[Property]:
    """The properties that must catch the known-bug target ``target_name``."""
    return [prop for prop in PROPERTIES if target_name in prop.catches]


# --- the table --------------------------------------------------------------------------------------
# Strategies and examples are imported inside the builders, when a property is used.

CACHE_BUGS = ("known-bug:cache-alias", "known-bug:cache-accumulate", "megatron-core")


def _dataset():
    from parity.strategies import dataset

    return dataset


def _corners() -> list[dict]:
    """The dataset corners, each an explicit example (parity.strategies.dataset.corner_cases)."""
    return [{"case": case} for case in _dataset().corner_cases()]


def _pipeline():
    from parity.strategies import pipeline

    return pipeline


def _diffusion():
    from parity.strategies import diffusion

    return diffusion


def _training():
    from parity.strategies import training

    return training


def _causal():
    from parity.strategies import causal

    return causal


def _bad_input():
    from parity.strategies import bad_input

    return bad_input


def _every(names) -> dict:
    """A validation property's arguments: one of the declared names (all of them are its explicit examples)."""
    return {"bad": st.sampled_from(tuple(names))}


PROPERTIES: tuple[Property, ...] = (
    Property(
        name="dataset/matches-oracle",
        interface="dataset",
        check="parity.table.checks.dataset:check_matches_oracle",
        arguments=lambda: {"case": _dataset().dataset_cases()},
        examples=lambda: [{"case": _dataset().UPSTREAM_PR_CASE}, {"case": _dataset().MOCK_DATA_CASE}, *_corners()],
        catches=CACHE_BUGS,
        hunted=True,
    ),
    Property(
        name="dataset/resume-agrees",
        interface="dataset",
        check="parity.table.checks.dataset:check_resume_agrees",
        arguments=lambda: {"resumed": _dataset().resumed_cases()},
        examples=lambda: [
            {"resumed": (_dataset().MOCK_DATA_CASE, 1)},
            *({"resumed": (case, case.length - 1)} for case in _dataset().corner_cases()),
        ],
        catches=CACHE_BUGS,
        hunted=True,
    ),
    Property(
        name="dataset/edits-do-not-leak",
        interface="dataset",
        check="parity.table.checks.dataset:check_edits_do_not_leak",
        arguments=lambda: {"case": _dataset().dataset_cases(), "edit": st.sampled_from(_dataset().EDITS)},
        examples=lambda: [
            {"case": _dataset().MOCK_DATA_CASE, "edit": "add_one"},
            *({**corner, "edit": _dataset().EDITS[n % 2]} for n, corner in enumerate(_corners())),
        ],
        only_if="promises_copies",
    ),
    Property(
        name="dataset/aliasing-hazards",
        interface="dataset",
        check="parity.table.checks.dataset:check_aliasing_hazards",
        arguments=lambda: {"case": _dataset().dataset_cases()},
        examples=lambda: [{"case": _dataset().MOCK_DATA_CASE}, *_corners()],
        kind="hazard",
    ),
    Property(
        name="dataset/dataloader-matches-oracle",
        interface="dataset",
        check="parity.table.checks.dataset:check_dataloader_matches_oracle",
        arguments=lambda: {"case": _dataset().small_dataset_cases, "batch_size": st.integers(1, 4)},
        # each of the two workers fills its own cache
        examples=lambda: [{"case": replace(_dataset().MOCK_DATA_CASE, serve_order=()), "batch_size": 2}],
        catches=CACHE_BUGS,
        slow=True,
        # each example starts two worker processes
        examples_fraction=0.3,
    ),
    Property(
        name="dataset/indices-match-reference",
        interface="dataset",
        check="parity.table.checks.dataset:check_indices_match_oracle",
        arguments=lambda: {"case": _dataset().dataset_cases()},
        examples=lambda: [{"case": _dataset().UPSTREAM_PR_CASE}, *_corners()],
    ),
    # --- megatron's files, its builder, blends, splits, index cache, and mock data (docs/dataset.md) ---
    Property(
        name="dataset/files-match-oracle",
        interface="dataset",
        check="parity.table.checks.dataset:check_matches_oracle",
        arguments=lambda: {"case": _dataset().dataset_cases().map(_dataset().on_disk)},
        examples=lambda: [{"case": _dataset().on_disk(case)} for case in _dataset().file_cases()],
        catches=("megatron-core",),
        only_if="reads_files",
    ),
    Property(
        name="dataset/files-indices-match-reference",
        interface="dataset",
        check="parity.table.checks.dataset:check_indices_match_oracle",
        arguments=lambda: {"case": _dataset().dataset_cases().map(_dataset().on_disk)},
        examples=lambda: [{"case": _dataset().on_disk(case)} for case in _dataset().file_cases()],
        only_if="reads_files",
    ),
    Property(
        name="pipeline/splits-match-reference",
        interface="pipeline",
        check="parity.table.checks.pipeline:check_splits_match_reference",
        arguments=lambda: {"case": _pipeline().pipeline_cases()},
        examples=lambda: [{"case": case} for case in _pipeline().PIPELINE_CASES],
    ),
    Property(
        name="pipeline/blend-matches-reference",
        interface="pipeline",
        check="parity.table.checks.pipeline:check_blend_matches_reference",
        arguments=lambda: {"case": _pipeline().pipeline_cases()},
        examples=lambda: [{"case": case} for case in _pipeline().PIPELINE_CASES],
    ),
    Property(
        name="pipeline/samples-match-oracle",
        interface="pipeline",
        check="parity.table.checks.pipeline:check_pipeline_matches_oracle",
        arguments=lambda: {"case": _pipeline().pipeline_cases()},
        examples=lambda: [{"case": case} for case in _pipeline().PIPELINE_CASES],
        catches=("megatron-core",),
    ),
    Property(
        name="pipeline/cache-reloads",
        interface="pipeline",
        check="parity.table.checks.pipeline:check_cache_reloads",
        arguments=lambda: {"case": _pipeline().pipeline_cases()},
        examples=lambda: [{"case": _pipeline().PIPELINE_CASES[0]}],
        catches=("megatron-core",),
    ),
    Property(
        name="pipeline/cache-key-separates-configs",
        interface="pipeline",
        check="parity.table.checks.pipeline:check_cache_key_separates_configs",
        arguments=lambda: {"case": _pipeline().pipeline_cases(), "variation": st.sampled_from(_pipeline().VARIATIONS)},
        examples=lambda: [
            {"case": _pipeline().PIPELINE_CASES[0], "variation": variation} for variation in _pipeline().VARIATIONS
        ],
        catches=("megatron-core",),
    ),
    Property(
        name="pipeline/fast-cache-load-over-stale-files",
        interface="pipeline",
        check="parity.table.checks.pipeline:check_fast_cache_load_over_stale_files",
        arguments=lambda: {"case": _pipeline().pipeline_cases()},
        examples=lambda: [{"case": _pipeline().PIPELINE_CASES[0]}],
        kind="hazard",
    ),
    Property(
        name="mock/matches-oracle",
        interface="mock",
        check="parity.table.checks.dataset:check_matches_oracle",
        arguments=lambda: {"case": _dataset().mock_cases()},
        examples=lambda: [{"case": _dataset().MEGATRON_MOCK_CASE}],
        catches=("megatron-core:mock",),
        hunted=True,
    ),
    Property(
        name="mock/resume-agrees",
        interface="mock",
        check="parity.table.checks.dataset:check_resume_agrees",
        arguments=lambda: {"resumed": _dataset().mock_cases().map(lambda case: (case, case.length - 1))},
        examples=lambda: [{"resumed": (_dataset().MEGATRON_MOCK_CASE, 1)}],
        catches=("megatron-core:mock",),
    ),
    Property(
        name="mock/indices-match-reference",
        interface="mock",
        check="parity.table.checks.dataset:check_indices_match_oracle",
        arguments=lambda: {"case": _dataset().mock_cases()},
        examples=lambda: [{"case": _dataset().MEGATRON_MOCK_CASE}],
    ),
    Property(
        name="diffusion/window-parity",
        interface="loss",
        check="parity.table.checks.diffusion:check_window_parity",
        arguments=lambda: {"case": _diffusion().window_cases()},
        # bfloat16 first: a known bug is caught (and the hunt stops) in production's precision.
        examples=lambda: [
            {"case": _diffusion().SEED_SCENARIO_BF16},
            {"case": _diffusion().SEED_SCENARIO},
            *({"case": case} for case in _diffusion().corner_cases()),
            {"case": _diffusion().ROW_MIX_WINDOW},
            {"case": _diffusion().LARGE_COUNT_WINDOW},
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
        arguments=lambda: {"case": _diffusion().window_cases(), "rows_per_microbatch": st.integers(1, 4)},
        # The corners where re-cutting can matter: unequal counts in a window of several microbatches; and
        # a correct re-cut whose trajectory drifts over seven steps (docs/budget.md, the trajectory reference).
        examples=lambda: [
            *({"case": case, "rows_per_microbatch": 1 + n % 4}
              for n, case in enumerate(_diffusion().corners_where(a_window_of_unequal_counts=True))),
            {"case": _diffusion().DRIFTING_RUN, "rows_per_microbatch": 1},
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
        arguments=lambda: {"case": _diffusion().window_cases(window_size=1)},
        examples=lambda: [{"case": case} for case in _diffusion().corners_where(microbatches_a_window="one")],
        shrink_runs=WINDOW_SHRINK_RUNS,
        examples_fraction=WINDOW_EXAMPLES_FRACTION,
        devices=DEVICES,
        dtypes=DTYPES,
    ),
    Property(
        name="diffusion/empty-window-is-zero",
        interface="loss",
        check="parity.table.checks.diffusion:check_empty_window_is_a_finite_zero",
        arguments=lambda: {"case": _diffusion().window_cases(empty_first_window=True)},
        examples=lambda: [{"case": case} for case in _diffusion().corners_where(a_window_masks_nothing=True)],
        shrink_runs=WINDOW_SHRINK_RUNS,
        examples_fraction=WINDOW_EXAMPLES_FRACTION,
        devices=DEVICES,
        dtypes=DTYPES,
    ),
    Property(
        name="noise/draws-match-oracle",
        interface="loss",
        check="parity.table.checks.diffusion:check_draws_match_the_oracle",
        arguments=lambda: {"case": _diffusion().window_cases(), "eos": st.sampled_from([_diffusion().EOS, None])},
        examples=lambda: [
            {"case": case, "eos": (_diffusion().EOS, None)[n % 2]} for n, case in enumerate(_diffusion().corner_cases())
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
        arguments=lambda: {"case": _training().trainer_cases()},
        # bfloat16 under autocast first: a known bug is caught (and the hunt stops) in production's precision;
        # float16 under loss scaling where the device has it (the CPU rejects it).
        examples=lambda: [
            {"case": _training().UPSTREAM_RUN_BF16},
            {"case": _training().UPSTREAM_RUN_FP16},
            {"case": _training().EMPTY_WINDOW_RUN},
            {"case": _training().UPSTREAM_RUN},
            {"case": _training().RANK_LOCAL_RUN},
            {"case": _training().ROW_MIX_RUN},
            {"case": _training().LARGE_COUNT_RUN},
        ],
        devices=DEVICES,
        catches=("known-bug:local-mean", "known-bug:logits-local-mean"),
        hunted=True,
        shrink_runs=WHOLE_RUN_SHRINK_RUNS,
        examples_fraction=0.3,
        whole_run=True,
        dtypes=TRAINER_DTYPES,
    ),
    # --- bad input refused (parity/strategies/bad_input.py): the report's ``validation`` scenario ---
    Property(
        name="validation/dataset-documents",
        interface="dataset",
        check="parity.table.checks.validation:check_refuses_unusable_documents",
        arguments=lambda: _every(_bad_input().BAD_DOCUMENTS),
        examples=lambda: [{"bad": name} for name in _bad_input().BAD_DOCUMENTS],
        only_if="validates_input",
        scenario="validation",
    ),
    Property(
        name="validation/dataset-indices",
        interface="dataset",
        check="parity.table.checks.validation:check_refuses_bad_indices",
        arguments=lambda: _every(_bad_input().BAD_INDICES),
        examples=lambda: [{"bad": name} for name in _bad_input().BAD_INDICES],
        scenario="validation",
    ),
    Property(
        name="validation/loss-arguments",
        interface="loss",
        check="parity.table.checks.validation:check_loss_refuses",
        arguments=lambda: _every(_bad_input().BAD_LOSS_INPUTS),
        examples=lambda: [{"bad": name} for name in _bad_input().BAD_LOSS_INPUTS],
        scenario="validation",
    ),
    Property(
        name="validation/trainer-settings",
        interface="trainer",
        check="parity.table.checks.validation:check_trainer_refuses",
        arguments=lambda: _every(_bad_input().BAD_TRAINER_INPUTS),
        examples=lambda: [{"bad": name} for name in _bad_input().BAD_TRAINER_INPUTS],
        scenario="validation",
        # each example starts a Trainer; the draws only repeat the declared names
        examples_fraction=0.2,
    ),
    # --- causal-LM training (docs/causal-lm.md): the report's ``causal-lm`` scenario ---
    Property(
        name="causal/trainer-follows-the-window",
        interface="causal_trainer",
        check="parity.table.checks.causal:check_causal_trainer",
        arguments=lambda: {"case": _causal().causal_cases()},
        examples=lambda: [{"case": case} for case in _causal().CAUSAL_CORNERS if case.world_size == 1],
        catches=("known-bug:causal-local-mean",),
        examples_fraction=0.1,  # each example is a whole Trainer run
        scenario="causal-lm",
    ),
    Property(
        name="causal/loop-follows-the-window",
        interface="loop",
        check="parity.table.checks.causal:check_causal_loop",
        arguments=lambda: {"case": _causal().causal_cases()},
        examples=lambda: [{"case": case} for case in _causal().CAUSAL_CORNERS if case.world_size == 1],
        catches=("megatron-schedule",),
        examples_fraction=0.1,
        scenario="causal-lm",
    ),
    Property(
        name="causal/dataset-feeds-a-run",
        interface="dataset",
        check="parity.table.checks.causal:check_dataset_feeds_a_causal_run",
        arguments=lambda: {"case": _dataset().small_dataset_cases, "causal": st.just(_causal().DATASET_FED_RUN)},
        examples=lambda: [{"case": _dataset().UPSTREAM_PR_CASE, "causal": _causal().DATASET_FED_RUN}],
        catches=CACHE_BUGS,
        examples_fraction=0.04,  # a whole Trainer run each: the upstream trigger, then one draw
        scenario="causal-lm",
    ),
)
