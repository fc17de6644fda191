"""A causal-LM run beside the oracle, and its verdict (docs/causal-lm.md, The verdict).

The oracle is the window rule, :func:`oracle.causal_lm.window_step`, over every rank's rows of each window: the
golden in float64 on the CPU from the run's own starting weights (of the model class the run trained: the oracle's
tiny Llama, or a library's own, :func:`parity.training.causal.record.starting_model`), and three references in the working dtype the
budget is derived from (docs/budget.md): the windows reversed (microbatches and rows) and each microbatch batched in
one padded forward as trainers run it, both along the oracle's own trajectory, and in order from the target's
parameters before each step. Every rank's logged loss, every gradient
and every parameter after every step is held to its budget; a ``normalisation`` failure is then named by the
objective the run follows (:mod:`parity.training.causal.objectives`), and what a driver patched to run here is said.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from oracle.causal_lm import window_step
from parity.budget import along_trajectory, before_each
from parity.compare import Verdict, judge
from parity.devices import torch_dtype
from parity.training.causal.objective_terms import finite_step
from parity.training.causal.objectives import name_causal_objective
from parity.training.causal.record import CausalCase, CausalRecord, starting_model, step_windows
from parity.training.step_compare import compare_steps


def _reversed(ranks):
    return [[list(reversed(microbatch)) for microbatch in reversed(microbatches)] for microbatches in ranks]


def oracle_steps(case: CausalCase, records: Sequence[CausalRecord], dtype: torch.dtype, device: str,
                 reverse: bool = False, along: Sequence | None = None, batched: bool = False) -> list:
    """The window rule over the run's windows in ``dtype``, from the weights the run started from (each rank its own
    count where the case says so; each microbatch in one padded forward when ``batched``)."""
    model = starting_model(case, records, dtype, device)
    windows = [_reversed(ranks) if reverse else ranks for ranks in step_windows(records)]
    starts = [None] * len(windows) if along is None else before_each(along)
    rank_local = not case.average_tokens_across_devices

    def step(m, k, ranks):
        return window_step(m, ranks, case.lr, rank_local=rank_local, batched=batched)

    return along_trajectory(model, windows, step, starts)


def causal_verdict(case: CausalCase, records: Sequence[CausalRecord]) -> Verdict:
    """Every rank's steps against the window rule, each tensor within its budget, and the verdict's diagnosis."""
    findings = [finding for record in records for finding in record.findings]
    if not records[0].steps:
        return judge([], findings)
    precision = torch_dtype(case.dtype)
    golden = oracle_steps(case, records, torch.float64, "cpu")
    # Along the oracle's own trajectory: each window reversed, and each microbatch batched as trainers run it (another
    # kernel's rounding, docs/budget.md); then in order from the target's parameters before each step.
    refs = [oracle_steps(case, records, precision, case.device, reverse=True),
            oracle_steps(case, records, precision, case.device, batched=True),
            oracle_steps(case, records, precision, case.device, along=records[0].steps)]
    ranked = len(records) > 1
    comparisons = []
    for rank, record in enumerate(records):
        comparisons += compare_steps(record.steps, refs, golden, precision, rank=rank if ranked else None, own_refs=2)
    verdict = judge(comparisons, findings)
    nan = not verdict.holds and not all(finite_step(step) for step in records[0].steps)
    if "normalisation" in verdict.failure_kinds or nan:  # a NaN named by what divides by zero
        named = name_causal_objective(case, records, verdict.comparisons)
        if named is not None:
            verdict.diagnosis = named
    patched = sorted({line for record in records for line in record.patched})
    if patched:
        said = f"patched to run here: {'; '.join(patched)}"
        verdict.diagnosis = f"{verdict.diagnosis} ({said})" if verdict.diagnosis else said
    return verdict
