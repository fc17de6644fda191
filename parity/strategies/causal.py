"""Causal-LM cases (docs/causal-lm.md, The rows): accumulation steps 1-4, microbatch and row sizes, packed and
unpacked rows, a rank with nothing supervised, the count over every rank or each rank's own, float32 and
bfloat16; and the corners every run must hold, first."""

from __future__ import annotations

from hypothesis import strategies as st

from parity.cases import CausalCase

#: The corners a causal-LM property runs before any drawn case: four microbatches of packed rows first (where a
#: per-microbatch normalisation shows: a known bug is caught on the first run), one microbatch; a rank that
#: supervises nothing; each rank its own count.
CAUSAL_CORNERS = (
    CausalCase(window_size=4, rows_per_microbatch=2, packed=True),
    CausalCase(window_size=1, steps=1, rows_per_microbatch=1),
    CausalCase(window_size=2, world_size=2, empty_ranks=(1,)),
    CausalCase(window_size=3, world_size=2, average_tokens_across_devices=False, data_seed=3),
)

#: The run a dataset target's rows feed (impl's causal-LM trainer): two windows' worth of rows would cycle the
#: upstream case's few samples, so one window of two microbatches of two rows.
DATASET_FED_RUN = CausalCase(window_size=2, steps=1, rows_per_microbatch=2)


@st.composite
def causal_cases(draw, world_sizes=(1,), dtypes=("float32",)) -> CausalCase:
    world = draw(st.sampled_from(world_sizes))
    return CausalCase(
        window_size=draw(st.integers(1, 4)),
        steps=draw(st.integers(1, 2)),
        rows_per_microbatch=draw(st.integers(1, 3)),
        max_length=draw(st.integers(4, 12)),
        data_seed=draw(st.integers(0, 2**16)),
        model_seed=draw(st.integers(0, 3)),
        dtype=draw(st.sampled_from(dtypes)),
        world_size=world,
        average_tokens_across_devices=draw(st.booleans()),
        packed=draw(st.booleans()),
        empty_ranks=draw(st.sampled_from([(), (0,)] if world == 1 else [(), (0,), (1,)])),
    )
