"""The GPT dataset's records: impl's and megatron-core's dataset, megatron's files, its pipeline (builder, blends,
splits, index cache) and mock data (docs/dataset.md)."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import strategies as st

import parity.table.rows.lazy as lazy
from parity.table.record import Property

DATASET: tuple[Property, ...] = (
    Property(
        name="dataset/matches-oracle",
        interface="dataset",
        check="parity.table.checks.dataset:check_matches_oracle",
        arguments=lambda: {"case": lazy.dataset().dataset_cases()},
        examples=lambda: [{"case": lazy.dataset().UPSTREAM_PR_CASE}, {"case": lazy.dataset().MOCK_DATA_CASE}, *lazy.corners()],
        catches=lazy.CACHE_BUGS,
        hunted=True,
    ),
    Property(
        name="dataset/resume-agrees",
        interface="dataset",
        check="parity.table.checks.dataset:check_resume_agrees",
        arguments=lambda: {"resumed": lazy.dataset().resumed_cases()},
        examples=lambda: [
            {"resumed": (lazy.dataset().MOCK_DATA_CASE, 1)},
            *({"resumed": (corner["case"], corner["case"].length - 1)} for corner in lazy.corners()),
        ],
        catches=lazy.CACHE_BUGS,
        hunted=True,
    ),
    Property(
        name="dataset/edits-do-not-leak",
        interface="dataset",
        check="parity.table.checks.dataset:check_edits_do_not_leak",
        arguments=lambda: {"case": lazy.dataset().dataset_cases(), "edit": st.sampled_from(lazy.dataset().EDITS)},
        examples=lambda: [
            {"case": lazy.dataset().MOCK_DATA_CASE, "edit": "add_one"},
            *({**corner, "edit": lazy.dataset().EDITS[n % 2]} for n, corner in enumerate(lazy.corners())),
        ],
        only_if="promises_copies",
    ),
    Property(
        name="dataset/aliasing-hazards",
        interface="dataset",
        check="parity.table.checks.dataset:check_aliasing_hazards",
        arguments=lambda: {"case": lazy.dataset().dataset_cases()},
        examples=lambda: [{"case": lazy.dataset().MOCK_DATA_CASE}, *lazy.corners()],
        kind="hazard",
    ),
    Property(
        name="dataset/dataloader-matches-oracle",
        interface="dataset",
        check="parity.table.checks.dataset:check_dataloader_matches_oracle",
        arguments=lambda: {"case": lazy.dataset().small_dataset_cases, "batch_size": st.integers(1, 4)},
        # each of the two workers fills its own cache
        examples=lambda: [{"case": replace(lazy.dataset().MOCK_DATA_CASE, serve_order=()), "batch_size": 2}],
        catches=lazy.CACHE_BUGS,
        slow=True,
        # each example starts two worker processes
        examples_fraction=0.3,
    ),
    Property(
        name="dataset/indices-match-reference",
        interface="dataset",
        check="parity.table.checks.dataset:check_indices_match_oracle",
        arguments=lambda: {"case": lazy.dataset().dataset_cases()},
        examples=lambda: [{"case": lazy.dataset().UPSTREAM_PR_CASE}, *lazy.corners()],
    ),
    # --- megatron's files, its builder, blends, splits, index cache, and mock data (docs/dataset.md) ---
    Property(
        name="dataset/files-match-oracle",
        interface="dataset",
        check="parity.table.checks.dataset:check_matches_oracle",
        arguments=lambda: {"case": lazy.dataset().dataset_cases().map(lazy.dataset().on_disk)},
        examples=lambda: [{"case": lazy.dataset().on_disk(case)} for case in lazy.dataset().file_cases()],
        catches=("megatron-core",),
        only_if="reads_files",
    ),
    Property(
        name="dataset/files-indices-match-reference",
        interface="dataset",
        check="parity.table.checks.dataset:check_indices_match_oracle",
        arguments=lambda: {"case": lazy.dataset().dataset_cases().map(lazy.dataset().on_disk)},
        examples=lambda: [{"case": lazy.dataset().on_disk(case)} for case in lazy.dataset().file_cases()],
        only_if="reads_files",
    ),
    Property(
        name="pipeline/splits-match-reference",
        interface="pipeline",
        check="parity.table.checks.pipeline:check_splits_match_reference",
        arguments=lambda: {"case": lazy.pipeline().pipeline_cases()},
        examples=lambda: [{"case": case} for case in lazy.pipeline().PIPELINE_CASES],
    ),
    Property(
        name="pipeline/blend-matches-reference",
        interface="pipeline",
        check="parity.table.checks.pipeline:check_blend_matches_reference",
        arguments=lambda: {"case": lazy.pipeline().pipeline_cases()},
        examples=lambda: [{"case": case} for case in lazy.pipeline().PIPELINE_CASES],
    ),
    Property(
        name="pipeline/samples-match-oracle",
        interface="pipeline",
        check="parity.table.checks.pipeline:check_pipeline_matches_oracle",
        arguments=lambda: {"case": lazy.pipeline().pipeline_cases()},
        examples=lambda: [{"case": case} for case in lazy.pipeline().PIPELINE_CASES],
        catches=("megatron-core",),
    ),
    Property(
        name="pipeline/cache-reloads",
        interface="pipeline",
        check="parity.table.checks.pipeline:check_cache_reloads",
        arguments=lambda: {"case": lazy.pipeline().pipeline_cases()},
        examples=lambda: [{"case": lazy.pipeline().PIPELINE_CASES[0]}],
        catches=("megatron-core",),
    ),
    Property(
        name="pipeline/cache-key-separates-configs",
        interface="pipeline",
        check="parity.table.checks.pipeline:check_cache_key_separates_configs",
        arguments=lambda: {"case": lazy.pipeline().pipeline_cases(), "variation": st.sampled_from(lazy.pipeline().VARIATIONS)},
        examples=lambda: [
            {"case": lazy.pipeline().PIPELINE_CASES[0], "variation": variation} for variation in lazy.pipeline().VARIATIONS
        ],
        catches=("megatron-core",),
    ),
    Property(
        name="pipeline/fast-cache-load-over-stale-files",
        interface="pipeline",
        check="parity.table.checks.pipeline:check_fast_cache_load_over_stale_files",
        arguments=lambda: {"case": lazy.pipeline().pipeline_cases()},
        examples=lambda: [{"case": lazy.pipeline().PIPELINE_CASES[0]}],
        kind="hazard",
    ),
    Property(
        name="mock/matches-oracle",
        interface="mock",
        check="parity.table.checks.dataset:check_matches_oracle",
        arguments=lambda: {"case": lazy.dataset().mock_cases()},
        examples=lambda: [{"case": lazy.dataset().MEGATRON_MOCK_CASE}],
        catches=("megatron-core:mock",),
        hunted=True,
    ),
    Property(
        name="mock/resume-agrees",
        interface="mock",
        check="parity.table.checks.dataset:check_resume_agrees",
        arguments=lambda: {"resumed": lazy.dataset().mock_cases().map(lambda case: (case, case.length - 1))},
        examples=lambda: [{"resumed": (lazy.dataset().MEGATRON_MOCK_CASE, 1)}],
        catches=("megatron-core:mock",),
    ),
    Property(
        name="mock/indices-match-reference",
        interface="mock",
        check="parity.table.checks.dataset:check_indices_match_oracle",
        arguments=lambda: {"case": lazy.dataset().mock_cases()},
        examples=lambda: [{"case": lazy.dataset().MEGATRON_MOCK_CASE}],
    ),
)
