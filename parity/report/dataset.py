"""The report's ``dataset-cache`` scenario: upstream's case of the cached GPT dataset (a valid split
keeps its padded last sample; a resumed run serves it first), each target's served samples against
the oracle's and against a fresh run's, compared once with parity.dataset.compare.
"""

from __future__ import annotations

from collections.abc import Callable

from parity.dataset_config import upstream_config, upstream_documents
from parity.report.model import VERDICT_ROW, Column, Options, ScenarioResult, oracle_column, verdict_column
from parity.targets import Target


def hazard_summary(hazards) -> str:
    """A table cell: each hazard's short form, "none" when nothing aliases."""
    return ", ".join(hazard.short for hazard in hazards) or "none"


def dataset_scenario(targets: list[Target], options: Options, progress: Callable[[str], None]) -> ScenarioResult:
    """Upstream's case: a valid split keeps its padded last sample; a resumed run serves it first.

    Per target: samples differing from the oracle, loss-mask positions wrong, fresh vs resumed
    disagreements (the required verdict), the aliasing hazards (failing only a target that promises
    copies), the installed version of an optional target, or the crash when the target raised."""
    from oracle.gpt_dataset import OracleGPTDataset
    from parity.dataset.compare import aliasing_hazards, last_sample_position
    from parity.safety.crash import TargetCrashed, call_target, is_known_crash

    documents = upstream_documents(options.seed)
    config = upstream_config()
    result = ScenarioResult(
        "dataset-cache",
        "padded last sample served first: fresh run vs resumed run, every sample vs the oracle",
        "bitwise (every key, dtype, shape); aliasing is a hazard, required only where copies are promised",
    )
    oracle = OracleGPTDataset(documents, config)
    expected = [oracle[k] for k in range(len(oracle))]
    for target in targets:
        progress(f"dataset-cache: {target.name}")
        version = {"version": target.version}  # of an optional target's package; "-" for this repository's
        factory = target.load("dataset")
        try:
            fresh = call_target("building the dataset", factory, documents, config)
            resumed = call_target("building the dataset", factory, documents, config)
            # The resumed run starts on the padded sample; then each index once, as a consumer sees it.
            served_first = last_sample_position(resumed)
            call_target("serving", resumed.__getitem__, served_first)
            seen_fresh = [call_target(f"serving dataset[{k}]", fresh.__getitem__, k) for k in range(len(fresh))]
            seen_resumed = [call_target(f"serving dataset[{k}]", resumed.__getitem__, k) for k in range(len(fresh))]
        except TargetCrashed as crash:
            known = is_known_crash(crash, target.known_crashes)
            result.columns.append(
                Column(target.name, target.expect, None, {**version, "crash": str(crash)}, crashed=str(crash),
                       known_crash=known, failures={VERDICT_ROW: str(crash)}, diagnosis=str(crash).splitlines()[0])
            )
            continue
        hazards = aliasing_hazards(list(enumerate(seen_fresh)))
        seen_fresh = [{key: tensor.clone() for key, tensor in sample.items()} for sample in seen_fresh]
        column = _dataset_column(target, version, seen_fresh, seen_resumed, expected, hazards)
        column.served_first = served_first
        result.columns.append(column)
    result.columns.append(
        oracle_column({"samples": len(oracle), "samples differing from the oracle": 0, "aliasing hazards": "none"})
    )
    return result


def _diagnosis(differing: list[int], disagreements: list[int], against_oracle: dict, samples: int) -> str | None:
    """The dataset verdict in one sentence: how many samples differ, and how the first does."""
    if not differing and not disagreements:
        return None  # a hazard alone: its finding says it
    said = []
    if differing:
        first = differing[0]
        how = f": dataset[{first}] {against_oracle[first]}" if first in against_oracle else ""
        said.append(f"{len(differing)} of {samples} samples of a resumed run differ from the oracle{how}")
    if disagreements:
        said.append(f"a resumed run and a run from 0 disagree on {len(disagreements)} samples")
    return "; ".join(said)


def _dataset_column(target: Target, version: dict, seen_fresh: list, seen_resumed: list, expected: list, hazards) -> Column:
    """The resumed run's samples against the oracle's and the fresh run's, each compared once: the
    figures, where keys differ, and the verdict: a ``mismatch`` for samples that differ (in the words
    the dataset properties use), a ``hazard`` for aliasing where the target promises copies."""
    import numpy as np

    from parity.compare import Finding, judge
    from parity.dataset.compare import differing_positions, sample_difference

    against_oracle = {k: sample_difference(sample, expected[k]) for k, sample in enumerate(seen_resumed[: len(expected)])}
    differing = [k for k, difference in against_oracle.items() if difference is not None]
    differing += list(range(len(expected), len(seen_resumed)))
    positions = [differing_positions(seen_resumed[k], expected[k]) for k in against_oracle]
    differences = {key: np.stack([p[key].numpy() for p in positions]) for key in expected[0]} if positions else {}
    against_fresh = {k: sample_difference(r, f) for k, (r, f) in enumerate(zip(seen_resumed, seen_fresh, strict=True))}
    disagreements = [k for k, difference in against_fresh.items() if difference is not None]
    figures = {
        **version,
        "samples": len(seen_fresh),
        "samples differing from the oracle": len(differing) + max(0, len(expected) - len(seen_fresh)),
        "loss-mask positions wrong": int(differences["loss_mask"].sum()) if "loss_mask" in differences else 0,
        "first differing index": differing[0] if differing else None,
        "fresh vs resumed disagree on": len(disagreements),
        "aliasing hazards": hazard_summary(hazards),
    }
    against_the_oracle = [f"len(dataset) = {len(seen_fresh)}, oracle {len(expected)}"] if len(seen_fresh) != len(expected) else []
    against_the_oracle += [
        f"dataset[{k}] of a resumed run vs the oracle: {against_oracle[k]}" for k in differing if k in against_oracle
    ]
    findings = [Finding("mismatch", "\n".join(against_the_oracle))] if against_the_oracle else []
    if disagreements:
        findings.append(Finding("mismatch", "\n".join(
            f"dataset[{k}] of a resumed run vs a run from 0: {against_fresh[k]}" for k in disagreements
        )))
    if target.promises_copies and hazards:
        findings.append(Finding("hazard", f"{target.name} promises copies, but: " + "; ".join(map(str, hazards))))
    column = verdict_column(target, judge([], findings, diagnosis=_diagnosis(differing, disagreements, against_oracle,
                                                                           len(expected))), figures)
    if hazards and not target.promises_copies:
        column.notes["aliasing hazards"] = [str(hazard) for hazard in hazards]
    column.differences = differences
    return column
