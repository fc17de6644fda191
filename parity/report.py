"""The side-by-side verdict of ``python -m parity``: known bugs, impl and the oracle, per scenario.

Each scenario reproduces the way an upstream pull request argued its fix: the same
case run by every target that provides the scenario's interface, the oracle's own figures beside
them, and one verdict per column: within the budget of docs/budget.md or not, and whether that is what the
target is expected to show (``impl`` holds, a known bug is caught).
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import torch

from parity.targets import Target
from parity.text_table import text_table

ORACLE = "oracle"


@dataclass
class Column:
    """One target's (or the oracle's) figures for a scenario and its verdict."""

    name: str
    expect: str  # "pass", "fail", or "reference" for the oracle
    holds: bool | None
    figures: dict[str, Any]
    error: str | None = None  # the scenario failed to build or run: never as expected
    #: "the target raised ..." (docs/dataset.md, Crashes): a crash, not a verdict on the property;
    #: as expected only when it is one of the target's ``known_crashes``.
    crashed: str | None = None
    known_crash: bool = False

    @property
    def as_expected(self) -> bool:
        if self.error is not None:
            return False
        if self.crashed is not None:
            return self.known_crash
        return self.expect == "reference" or self.holds == (self.expect == "pass")

    @property
    def verdict(self) -> str:
        if self.error is not None:
            return "error (UNEXPECTED)"
        if self.crashed is not None:
            return "crashed (known upstream crash)" if self.known_crash else "crashed (UNEXPECTED)"
        if self.expect == "reference":
            return "reference"
        state = "within budget" if self.holds else "outside budget"
        meaning = {True: "ok" if self.expect == "pass" else "caught", False: "UNEXPECTED"}[self.as_expected]
        return f"{state} ({meaning})"


@dataclass
class ScenarioResult:
    name: str
    title: str
    budget: str
    columns: list[Column] = field(default_factory=list)

    @property
    def as_expected(self) -> bool:
        return all(column.as_expected for column in self.columns)


def oracle_column(figures: dict[str, Any]) -> Column:
    """The reference's own figures beside the targets'; it has no verdict of its own."""
    return Column(ORACLE, "reference", None, figures)


@dataclass(frozen=True)
class Options:
    device: str = "cpu"
    dtype: str = "float32"
    seed: int = 0
    ddp: bool = False
    #: Random examples per property of the table in the ``properties`` scenario (after its explicit ones).
    examples: int = 3


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.9g}" if abs(value) >= 1e-3 or value == 0 else f"{value:.3e}"
    if value is None:
        return "-"
    return str(value)


def format_table(result: ScenarioResult) -> str:
    rows = list(dict.fromkeys(key for column in result.columns for key in column.figures))
    header = ["", *(c.name for c in result.columns)]
    body = [[row, *(_fmt(c.figures.get(row)) for c in result.columns)] for row in rows]
    body.append(["verdict", *(c.verdict for c in result.columns)])
    return "\n".join([f"== {result.name}: {result.title}", f"   budget: {result.budget}", text_table(header, body)])


# --- dataset cache -------------------------------------------------------------------------------


def hazard_summary(hazards) -> str:
    """A table cell: each hazard's short form, "none" when nothing aliases."""
    return ", ".join(hazard.short for hazard in hazards) or "none"


def dataset_documents(seed: int) -> list:
    """Eight documents of differing length (1 to 119 tokens) and content, each closed by an EOD:
    unlike upstream's mock ramps, no two samples look alike, so a sample boundary or index that is
    off by one shows as a difference."""
    import numpy as np

    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 120, size=8)
    return [np.append(rng.integers(1, 64, size=length - 1), 0).astype(np.int64) for length in lengths]


def dataset_scenario(targets: list[Target], options: Options, progress: Callable[[str], None]) -> ScenarioResult:
    """Upstream's case: a valid split keeps its padded last sample; a resumed run serves it first.

    Per target: samples differing from the oracle, loss-mask positions wrong, fresh vs resumed
    disagreements (the required verdict), the aliasing hazards (failing only a target that promises
    copies), the installed version of an optional target, or the crash when the target raised."""
    from oracle.gpt_dataset import OracleGPTDataset
    from parity.dataset_compare import (
        TargetCrashed,
        aliasing_hazards,
        call_target,
        is_known_crash,
        last_sample_position,
        sample_difference,
    )
    from parity.dataset_config import GPTDatasetConfig

    documents = dataset_documents(options.seed)
    config = GPTDatasetConfig(
        sequence_length=32, vocab_size=64, eod_id=0, split="valid", drop_last_partial_validation_sequence=False
    )
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
            call_target("serving", resumed.__getitem__, last_sample_position(resumed))
            seen_fresh = [call_target(f"serving dataset[{k}]", fresh.__getitem__, k) for k in range(len(fresh))]
            seen_resumed = [call_target(f"serving dataset[{k}]", resumed.__getitem__, k) for k in range(len(fresh))]
        except TargetCrashed as crash:
            figures = {**version, "crash": str(crash)}
            result.columns.append(
                Column(target.name, target.expect, None, figures, crashed=str(crash),
                       known_crash=is_known_crash(crash, target.known_crashes))
            )
            continue
        hazards = aliasing_hazards(list(enumerate(seen_fresh)))
        seen_fresh = [{key: tensor.clone() for key, tensor in sample.items()} for sample in seen_fresh]
        differing = [
            k for k, sample in enumerate(seen_resumed)
            if k >= len(expected) or sample_difference(sample, expected[k]) is not None
        ]
        wrongly_masked = sum(
            int((s["loss_mask"] != e["loss_mask"]).sum())
            for s, e in zip(seen_resumed, expected)
            if s["loss_mask"].shape == e["loss_mask"].shape
        )
        disagreements = sum(sample_difference(r, f) is not None for r, f in zip(seen_resumed, seen_fresh, strict=True))
        figures = {
            **version,
            "samples": len(fresh),
            "samples differing from the oracle": len(differing) + abs(len(fresh) - len(expected)),
            "loss-mask positions wrong": wrongly_masked,
            "first differing index": differing[0] if differing else None,
            "fresh vs resumed disagree on": disagreements,
            "aliasing hazards": hazard_summary(hazards),
        }
        holds = not differing and not disagreements and len(fresh) == len(expected)
        if target.promises_copies:
            holds = holds and not hazards
        result.columns.append(Column(target.name, target.expect, holds, figures))
    result.columns.append(
        oracle_column({"samples": len(oracle), "samples differing from the oracle": 0, "aliasing hazards": "none"})
    )
    return result


# --- diffusion window ----------------------------------------------------------------------------


def _window_figures(run) -> tuple[list, dict[str, Any]]:
    """A target's figures, then the oracle's on that target's own draws: its float64 loss and its
    own error in the working dtype (the worst valid evaluation order), which the budget is made of."""
    comparisons = run.comparisons()
    grads = [c for c in comparisons if c.quantity == "grad"]
    params = [c for c in comparisons if c.quantity == "param"]
    return comparisons, {
        "loss": run.out[0].loss.item(),
        "max |grad - golden|": max(c.error for c in grads),
        "max |param - golden| after SGD": max(c.error for c in params),
        "grad budget (largest)": max(c.budget for c in grads),
        "mask counts": [int(b["masked_indices"].sum()) for b in run.noised[0]],
        "oracle: loss (float64)": run.golden[0].loss.item(),
        "oracle: max |grad - golden|": max(c.reference_error for c in grads),
        "oracle: max |param - golden|": max(c.reference_error for c in params),
    }


def window_scenario(targets: list[Target], options: Options, progress: Callable[[str], None]) -> ScenarioResult:
    """Micro-batch 1, accumulation 2, two equal-length answers (the seed pull request)."""
    from parity.cases import SEED_SCENARIO
    from parity.window_cases import parity_run

    case = replace(SEED_SCENARIO, dtype=getattr(torch, options.dtype), model_seed=options.seed)
    result = ScenarioResult(
        "diffusion-window",
        "micro-batch 1, accumulation 2, two equal-length answers; one SGD step",
        "per tensor: 2 x the oracle's own error in the working dtype + 4 eps x magnitude (docs/budget.md)",
    )
    for target in targets:
        progress(f"diffusion-window: {target.name}")
        comparisons, figures = _window_figures(parity_run(target.load("loss"), case, options.device))
        result.columns.append(Column(target.name, target.expect, all(c.holds for c in comparisons), figures))
    return result


# --- whole training run --------------------------------------------------------------------------


def training_scenario(targets: list[Target], options: Options, progress: Callable[[str], None]) -> ScenarioResult:
    """``Trainer.train()``: 5 examples, micro-batch 1, accumulation 2 (windows 2, 2, 1), plain SGD.

    Every trainer draws its own noise, so the oracle replays each target's own draws: its figures
    sit in that target's column (docs/trainer.md), never beside another target's.
    """
    from parity.trainer_run import TrainerCase, golden_run, model_contract, run_trainer, trainer_verdict

    case = TrainerCase(dtype=options.dtype, device=options.device, model_seed=options.seed)
    result = ScenarioResult(
        "training-run",
        "Trainer.train(): windows 2, 2, 1; three SGD updates; then evaluate() and prediction_step",
        "per tensor, every step (docs/budget.md); logged losses in float32, the Trainer's accumulator; "
        "oracle rows: the oracle on that column's own draws",
    )
    for target in targets:
        progress(f"training-run: {target.name}")
        trainer_class = target.load("trainer")
        with tempfile.TemporaryDirectory(prefix="parity-report-") as output_dir:
            record = run_trainer(trainer_class, case, output_dir)
        verdict = trainer_verdict(case, [record])
        comparisons = verdict.comparisons
        figures: dict[str, Any] = {
            "model contract": model_contract(trainer_class),
            "windows": [len(w) for w in record.train_draws],
            "realized masks per window": [sum(int(d.masked_indices.sum()) for d in w) for w in record.train_draws],
            "logged losses": [round(s.loss.item(), 6) for s in record.steps],
        }
        if comparisons:
            last = len(record.steps) - 1
            final = [c for c in comparisons if c.step == last and c.quantity == "param"]
            golden = golden_run(case, [record])
            figures |= {
                "max |param - golden| after 3 steps": max(c.error for c in final),
                "param budget (largest, last step)": max(c.budget for c in final),
                "max |grad - golden| (any step)": max(c.error for c in comparisons if c.quantity == "grad"),
                "eval loss": record.eval_loss,
                "oracle: logged losses": [round(s.loss.item(), 6) for s in golden.steps],
                "oracle: eval loss": None if golden.eval_loss is None else golden.eval_loss.item(),
            }
        figures["kinds"] = ", ".join(verdict.kinds) or "-"
        result.columns.append(Column(target.name, target.expect, verdict.holds, figures))
    return result


# --- distributed ---------------------------------------------------------------------------------


def distributed_scenario(targets: list[Target], options: Options, progress: Callable[[str], None]) -> ScenarioResult:
    """The two-rank cases, each rank a real process (Gloo on CPU, NCCL on two GPUs)."""
    from parity.distributed import launch

    result = ScenarioResult(
        "distributed",
        f"two ranks over {'NCCL' if options.device == 'cuda' else 'Gloo'}: unequal counts, one rank empty, "
        "all empty, rank-local normalisation",
        "per tensor on every rank (docs/budget.md); cell = verdict (worst error/budget) and failing kinds",
    )
    for target in targets:
        progress(f"distributed: {target.name} (two processes)")
        with tempfile.TemporaryDirectory(prefix="parity-report-ddp-") as workdir:
            path = f"{workdir}/verdicts.json"
            arguments = ["--target", target.name, "--device", options.device, "--json", path]
            launch("parity.ddp_cases", arguments, 2, timeout_s=600)
            with open(path) as handle:
                cases = json.load(handle)["cases"]
        figures = {
            name: f"holds ({v['worst_ratio']:.3g})" if v["holds"] else f"FAILS: {', '.join(v['kinds'])} ({v['worst_ratio']:.3g})"
            for name, v in cases.items()
        }
        holds = all(v["holds"] for v in cases.values())
        result.columns.append(Column(target.name, target.expect, holds, figures))
    return result


# --- every property of the table, on a small random budget ----------------------------------------


def properties_scenario(targets: list[Target], options: Options, progress: Callable[[str], None]) -> ScenarioResult:
    """The whole property suite in miniature, so a break the suite can find fails the report too.

    A target expected to pass runs every property it has the interface for: the explicit examples,
    then ``options.examples`` drawn ones. A known bug runs the properties that must catch it, until
    one does. A cell says how many examples held, or the first line of the failure and its kind.
    """
    from parity.property_table import catching, properties_for

    result = ScenarioResult(
        "properties",
        f"every property of the table: explicit examples + {options.examples} drawn (derandomized, no shrinking)",
        "each property's own (bitwise for datasets; docs/budget.md for training maths)",
    )
    for target in targets:
        table = properties_for(target)
        if target.is_known_bug:
            table = [prop for prop in catching(target.name) if prop.applies_to(target)] or table
        if not table:
            continue
        figures, failed = {}, False
        for prop in table:
            if failed and target.is_known_bug:
                figures[prop.name] = "-"
                continue
            progress(f"properties: {target.name} / {prop.name}")
            figures[prop.name], failed_here = _property_cell(prop, target, options)
            failed = failed or failed_here
        result.columns.append(Column(target.name, target.expect, not failed, figures))
    return result


def _property_cell(prop, target: Target, options: Options) -> tuple[str, bool]:
    try:
        found = prop.hunt(
            target.load(prop.interface),
            max_examples=options.examples,
            shrink=False,
            device=options.device if options.device in prop.devices else "cpu",
            target=target,
        )
    except Exception as error:  # the target (or the harness) raised: a crash, not a counterexample
        return f"crashed: {type(error).__name__}: {_first_line(error)}", True
    if found.found:
        return f"FAILS at example {found.examples_to_failure}: {_first_line(found.message)}", True
    if found.notes:
        return f"holds; note: {'; '.join(_first_line(note) for note in found.notes[:2])}", False
    return "holds", False


def _first_line(message, width: int = 64) -> str:
    """The message's first line (with the next one when it only announces it), cut to ``width``."""
    lines = [line.strip() for line in str(message).strip().splitlines() if line.strip()] or [""]
    text = " ".join(lines[:2]) if lines[0].endswith(":") and len(lines) > 1 else lines[0]
    return text if len(text) <= width else text[: width - 3] + "..."


@dataclass(frozen=True)
class Scenario:
    name: str
    interface: str
    run: Callable[[list[Target], Options, Callable[[str], None]], ScenarioResult]
    needs_ddp: bool = False


SCENARIOS = {
    s.name: s
    for s in (
        Scenario("dataset-cache", "dataset", dataset_scenario),
        Scenario("diffusion-window", "loss", window_scenario),
        Scenario("training-run", "trainer", training_scenario),
        Scenario("distributed", "trainer", distributed_scenario, needs_ddp=True),
        Scenario("properties", "any", properties_scenario),
    )
}


def run_report(
    targets: list[Target], options: Options, only: list[str] | None, progress: Callable[[str], None]
) -> list[ScenarioResult]:
    """Every scenario some target provides the interface for; ``distributed`` only with ``--ddp``."""
    results = []
    for scenario in SCENARIOS.values():
        if only and scenario.name not in only:
            continue
        if scenario.needs_ddp and not options.ddp and not only:
            continue
        columns = [t for t in targets if scenario.interface == "any" or t.provides(scenario.interface)]
        try:
            result = scenario.run(columns, options, progress) if columns else None
        except Exception as error:  # failed to build or run: a failed cell with the error's first line
            message = f"{type(error).__name__}: {_first_line(error)}"
            result = ScenarioResult(scenario.name, "failed to build or run", "-")
            result.columns.append(Column("error", "pass", None, {"error": message}, error=message))
        if result is not None and result.columns:
            results.append(result)
    return results


def as_json(results: list[ScenarioResult], options: Options) -> str:
    return json.dumps(
        {
            "options": asdict(options),
            "as_expected": all(r.as_expected for r in results),
            "scenarios": [
                {**asdict(r), "as_expected": r.as_expected, "verdicts": {c.name: c.verdict for c in r.columns}}
                for r in results
            ],
        },
        indent=2,
        default=str,
    )
