"""The causal-LM properties as plain check functions (docs/causal-lm.md).

A causal-LM trainer (the ``causal_trainer`` interface) or a loop of the user's (``loop``) trains a case's rows,
and every rank's loss, gradients and parameters are held to the window rule (``causal_verdict``); a dataset target
feeds a run of impl's causal-LM trainer, and a loss mask it gets wrong fails that run as a wrong count, the dataset
named as the cause. Here, above both wings, because the last reads the dataset wing and the training wing at once.
"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import reject

from oracle.causal_lm import TINY_CAUSAL_CONFIG, Row, window_count
from oracle.gpt_dataset import OracleGPTDataset
from parity.cases import CausalCase, DatasetCase
from parity.compare import assert_verdict
from parity.safety.crash import is_known_crash
from parity.table.checks.dataset import make, serve, serve_plan, served
from parity.training.causal.drivers.causal_trainer import run_causal_trainer
from parity.training.causal.drivers.hf_trainer import run_hf_trainer
from parity.training.causal.drivers.loop import loop_declines
from parity.training.causal.drivers.ranks import run_on_ranks
from parity.training.causal.gpt_rows import UnsupportedSampleConfig, sample_row
from parity.training.causal.verdict import causal_verdict
from parity.training.launch.processes import RankFailed
from parity.training.launch.session import CAUSAL_SESSION, NotOnTwoRanks

#: The drivers a launch of ranks runs (``parity.training.causal.drivers.ranks``).
DRIVER = "parity.training.causal.drivers.causal_trainer:run_causal_trainer"


def _on_two_ranks(path: str | None, case: CausalCase):
    """Every rank's record from the session's one two-rank launch; a case it holds none for is declined."""
    if path is None:
        reject()  # a subject the launch cannot name
    try:
        return CAUSAL_SESSION.records(path, case)
    except NotOnTwoRanks:
        reject()  # why is the launch's: the machine, a loop's supports (docs/causal-lm.md, Two ranks in a session)


def check_causal_trainer(trainer, case: CausalCase, target=None) -> None:
    """Every rank's steps follow the window rule (docs/causal-lm.md, The window rule)."""
    if case.world_size == 1:
        records = [run_causal_trainer(trainer, case)]  # a Trainer subclass, or TRL's SFTTrainer in a mode
    else:
        records = _on_two_ranks(getattr(target, "causal_trainer", None), case)
    assert_verdict(causal_verdict(case, records))


def check_causal_loop(loop, case: CausalCase, target=None) -> list[str]:
    """A loop of the user's follows the window rule, on the ranks its case names, each a process of a launch (a loop
    prepares its model for a process group: DDP, ``fully_shard``, megatron's parallel state), on the rule the case
    asks where the loop follows it (its ``supports``; else the case is declined). A crash the target declares (its
    ``known_crashes``) is said as a note and the search goes on; any other is the target's crash."""
    if target is None or target.loop is None or loop_declines(loop, case):
        reject()  # a loop the launch cannot name, or a setting it does not follow
    try:
        if case.world_size == 1:
            [records] = run_on_ranks(DRIVER, [target.loop], case)
        else:
            records = _on_two_ranks(target.loop, case)
    except RankFailed as failed:  # a loop's own raise ends its rank: a crash of the target's, known or not
        crash = failed.as_crash()
        if crash is None:
            raise
        if is_known_crash(crash, target.known_crashes):  # what the target declares it does (torchtitan's raise on a
            return [f"crashed as it declares: {crash}"]  # window that supervises nothing): said, the search goes on
        raise crash from None
    assert_verdict(causal_verdict(case, records))
    return []


def _rows(dataset, oracle: OracleGPTDataset, case: DatasetCase, causal: CausalCase):
    """The rows the target's dataset serves in its serve plan, the oracle's for the same positions, and which
    positions and calls those were: ``[step][microbatch][row]`` of the one rank."""
    plan = serve_plan(dataset, case)
    per_step = causal.window_size * causal.rows_per_microbatch
    needed = causal.steps * per_step
    order = [plan[i % len(plan)] for i in range(needed)]
    try:
        got = [sample_row(serve(dataset, idx), case.config) for idx in order]
        want = [sample_row(oracle[idx], case.config) for idx in order]
    except UnsupportedSampleConfig:
        reject()

    def windows(rows: list[Row]):
        return [[rows[k * per_step + g * causal.rows_per_microbatch:][:causal.rows_per_microbatch]
                 for g in range(causal.window_size)] for k in range(causal.steps)]

    return windows(got), windows(want), [served(idx, call) for call, idx in enumerate(order)]


def _first_difference(got, want, where) -> str | None:
    flat_got = [row for window in got for microbatch in window for row in microbatch]
    flat_want = [row for window in want for microbatch in window for row in microbatch]
    for i, (row, expected) in enumerate(zip(flat_got, flat_want, strict=True)):
        if row != expected:
            return (f"{where[i]} supervises {row.supervised} positions where the oracle's supervises {expected.supervised} "
                    "(its loss mask or labels differ)")
    return None


def check_dataset_feeds_a_causal_run(factory, case: DatasetCase, causal: CausalCase) -> None:
    """impl's causal-LM trainer trained on what the dataset target serves is held to the window rule on what the
    oracle dataset serves: a wrong loss mask is a wrong count, and the verdict names the dataset as its cause
    (docs/causal-lm.md, The dataset feeds the run)."""
    from impl.causal_trainer import WindowedCausalTrainer

    if case.config.vocab_size > TINY_CAUSAL_CONFIG["vocab_size"]:
        reject()  # the tiny causal LM embeds no more tokens
    dataset = make(factory, case)
    got, want, where = _rows(dataset, OracleGPTDataset(case.documents, case.config), case, causal)
    record = run_hf_trainer(WindowedCausalTrainer, causal, rows=[got])
    verdict = causal_verdict(causal, [replace(record, windows=want)])
    cause = _first_difference(got, want, where)
    if cause is not None and not verdict.holds:
        served_rule = causal_verdict(causal, [record])  # the trainer on the rows it was served
        trainer = ("the trainer follows the window rule on the rows it was served" if served_rule.holds else
                   f"on the rows it was served the trainer fails too: {served_rule.diagnosis}")
        k = next(k for k, (window, expected) in enumerate(zip(got, want, strict=True)) if window != expected)
        verdict.diagnosis = (f"the dataset is the cause: {cause}; window {k}'s count is {window_count([got[k]])} where "
                             f"the oracle's is {window_count([want[k]])}, and {trainer} (docs/causal-lm.md, The dataset "
                             "feeds the run)")
    assert_verdict(verdict)
