"""Causal-LM cases (docs/causal-lm.md, The rows): accumulation steps 1-4, microbatch and row sizes, packed and
unpacked rows, a rank with nothing supervised, the count over every rank or each rank's own, float32 and
bfloat16; and the corners every run must hold, first."""

from __future__ import annotations

from hypothesis import strategies as st

from parity.cases import CausalCase

#: The two-rank corners, every one in the session's one two-rank launch (``parity.training.launch.session``), never
#: a launch per example: both ranks supervising in unequal numbers (8 and 5, then 3 and 7, an empty microbatch
#: among them: a count never summed over the ranks, or a world factor without the gathered count, shows here and
#: nowhere else); rank 1 supervising nothing (where a rank-local count is the window's twice over); each rank its
#: own count (``average_tokens_across_devices=False``, the counts unequal); packed rows in bfloat16, both supervising.
TWO_RANK_CORNERS = (
    CausalCase(window_size=2, steps=2, rows_per_microbatch=1, max_length=8, data_seed=0, world_size=2),
    CausalCase(window_size=2, steps=1, rows_per_microbatch=1, max_length=6, data_seed=1, world_size=2, empty_ranks=(1,)),
    CausalCase(window_size=2, steps=2, rows_per_microbatch=1, max_length=8, data_seed=0, world_size=2,
               average_tokens_across_devices=False),
    CausalCase(window_size=2, steps=1, rows_per_microbatch=1, max_length=8, data_seed=11, world_size=2, packed=True,
               dtype="bfloat16"),
)

#: The corners a causal-LM property runs before any drawn case: four microbatches of packed rows first (where a
#: per-microbatch normalisation shows: a known bug is caught on the first run), the last window three (the end of an
#: epoch: the window rule divides it by its own count, a loop by its own length); the same unpacked, so a loop that
#: never packs (litgpt's, ``supports``) is named in float32 too, before bfloat16's coarser budget; one microbatch; a
#: window that supervises nothing; bfloat16 with a microbatch of three rows; then the two-rank corners.
CAUSAL_CORNERS = (
    CausalCase(window_size=4, rows_per_microbatch=2, packed=True, last_window=3),
    CausalCase(window_size=4, rows_per_microbatch=2, last_window=3),
    CausalCase(window_size=1, steps=1, rows_per_microbatch=1),
    CausalCase(window_size=2, steps=1, rows_per_microbatch=1, empty_ranks=(0,)),
    CausalCase(window_size=3, steps=1, rows_per_microbatch=3, dtype="bfloat16", data_seed=2),
    *TWO_RANK_CORNERS,
)

#: The run a dataset target's rows feed (impl's causal-LM trainer): two windows' worth of rows would cycle the
#: upstream case's few samples, so one window of two microbatches of two rows.
DATASET_FED_RUN = CausalCase(window_size=2, steps=1, rows_per_microbatch=2)

#: The same run served unpacked and packed: a sample split into documents by ``reset_attention_mask`` is a row of
#: several documents either way, kept apart by its ``position_ids`` (``parity.training.causal.drivers.batches``).
DATASET_FED_RUNS = (DATASET_FED_RUN, CausalCase(window_size=2, steps=1, rows_per_microbatch=2, packed=True))


def dataset_fed_examples() -> list[dict]:
    """The dataset-fed run's explicit examples: the upstream trigger, then a sample split into documents by
    ``reset_attention_mask`` (``SPLIT_SAMPLE_CASE``, a nightly false alarm) in each of the runs."""
    from parity.strategies.dataset import SPLIT_SAMPLE_CASE, UPSTREAM_PR_CASE

    return [{"case": UPSTREAM_PR_CASE, "causal": DATASET_FED_RUN},
            *({"case": SPLIT_SAMPLE_CASE, "causal": run} for run in DATASET_FED_RUNS)]


@st.composite
def causal_cases(draw, world_sizes=(1, 2), dtypes=("float32", "bfloat16")) -> CausalCase:
    """A case on one rank of every size, or one of the two-rank corners: a case of two ranks is drawn from those the
    session's one two-rank launch runs, so a draw never launches ranks of its own."""
    world = draw(st.sampled_from(world_sizes))
    if world > 1:
        return draw(st.sampled_from([case for case in TWO_RANK_CORNERS
                                     if case.world_size == world and case.dtype in dtypes]))
    window_size, steps = draw(st.integers(1, 4)), draw(st.integers(1, 2))
    partial = st.none() if window_size == 1 or steps == 1 else st.none() | st.integers(1, window_size - 1)
    return CausalCase(
        window_size=window_size,
        steps=steps,
        rows_per_microbatch=draw(st.integers(1, 3)),
        max_length=draw(st.integers(4, 12)),
        data_seed=draw(st.integers(0, 2**16)),
        model_seed=draw(st.integers(0, 3)),
        dtype=draw(st.sampled_from(dtypes)),
        world_size=world,
        average_tokens_across_devices=draw(st.booleans()),
        packed=draw(st.booleans()),
        empty_ranks=draw(st.sampled_from([(), (0,)] if world == 1 else [(), (0,), (1,)])),
        last_window=draw(partial),
    )
