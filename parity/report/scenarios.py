"""The side-by-side verdict of ``python -m parity``: known bugs, impl and the oracle, per scenario.

Each scenario reproduces the way an upstream pull request argued its fix: the same
case run by every target that provides the scenario's interface, the oracle's own figures beside
them, and one verdict per column: within the budget of docs/budget.md or not, and whether that is what the
target is expected to show (``impl`` holds, a known bug is caught).
"""

from __future__ import annotations

import functools
import json
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import torch

from parity.report.dataset import dataset_scenario
from parity.report.isolation import ChildEnded, run_in_child, start_method
from parity.report.model import VERDICT_ROW, Column, Options, ScenarioResult, verdict_column
from parity.safety.bounds import CallTimedOut, call_bound
from parity.targets import Target, builtin_targets

# --- diffusion window ----------------------------------------------------------------------------


def _window_figures(run, comparisons) -> dict[str, Any]:
    """A target's figures, then the oracle's on that target's own draws, read off the comparisons:
    its float64 loss and its own error in the working dtype (the worst valid evaluation order),
    which the budget is made of."""
    grads = [c for c in comparisons if c.quantity == "grad"]
    params = [c for c in comparisons if c.quantity == "param"]
    (loss,) = [c for c in comparisons if c.quantity == "loss" and c.step == 0]
    return {
        "loss": loss.out_value,
        "max |grad - golden|": max(c.error for c in grads),
        "max |param - golden| after SGD": max(c.error for c in params),
        "grad budget (largest)": max(c.budget for c in grads),
        "mask counts": [int(b["masked_indices"].sum()) for b in run.noised[0]],
        "oracle: loss (float64)": loss.golden_value,
        "oracle: max |grad - golden|": max(c.reference_error for c in grads),
        "oracle: max |param - golden|": max(c.reference_error for c in params),
    }


def window_scenario(targets: list[Target], options: Options, progress: Callable[[str], None]) -> ScenarioResult:
    """Micro-batch 1, accumulation 2, two equal-length answers (the seed pull request), judged as
    ``diffusion/window-parity`` judges it."""
    from parity.cases import SEED_SCENARIO
    from parity.compare import judge
    from parity.training.diffusion.drivers.window_cases import parity_run

    case = replace(SEED_SCENARIO, dtype=getattr(torch, options.dtype), model_seed=options.seed)
    result = ScenarioResult(
        "diffusion-window",
        "micro-batch 1, accumulation 2, two equal-length answers; one SGD step",
        "per tensor: 2 x the oracle's own error in the working dtype + 4 eps x magnitude (docs/budget.md)",
    )
    for target in targets:
        progress(f"diffusion-window: {target.name}")
        run = parity_run(target.load("loss"), case, options.device)
        verdict = judge(run.comparisons(), uninformative=run.uninformative())
        result.columns.append(verdict_column(target, verdict, _window_figures(run, verdict.comparisons)))
    return result


# --- whole training run --------------------------------------------------------------------------


def training_scenario(targets: list[Target], options: Options, progress: Callable[[str], None]) -> ScenarioResult:
    """``Trainer.train()``: 5 examples, micro-batch 1, accumulation 2 (windows 2, 2, 1), plain SGD.

    Every trainer draws its own noise, so the oracle replays each target's own draws: its figures
    sit in that target's column (docs/trainer.md), never beside another target's. They are read off
    the verdict's comparisons (each carries the golden value), never recomputed.
    """
    from parity.cases import LOSS_SCALED_EPS, PUBLISHED_EPS, TrainerCase, at_dtype
    from parity.training.diffusion.drivers.trainer_run import run_trainer
    from parity.training.diffusion.verdict import trainer_verdict

    eps = LOSS_SCALED_EPS if options.dtype == "float16" else PUBLISHED_EPS
    case = at_dtype(TrainerCase(device=options.device, model_seed=options.seed, eps=eps), options.dtype)
    result = ScenarioResult(
        "training-run",
        "Trainer.train(): windows 2, 2, 1; three SGD updates; then evaluate() and prediction_step"
        + ("; fp16=True at eps 1" if options.dtype == "float16" else ""),
        "per tensor, every step (docs/budget.md); logged losses in float32, the Trainer's accumulator; "
        "oracle rows: the oracle on that column's own draws",
    )
    for target in targets:
        progress(f"training-run: {target.name}")
        trainer_class = target.load("trainer")
        with tempfile.TemporaryDirectory(prefix="parity-report-") as output_dir:
            record = run_trainer(trainer_class, case, output_dir)
        verdict = trainer_verdict(case, [record])
        figures: dict[str, Any] = {
            "model contract": record.contract,
            "eps": f"{record.eps:g} ({record.eps_source})",
            "windows": record.windows,
            "realized masks per window": [sum(int(d.masked_indices.sum()) for d in w) for w in record.train_draws],
            "logged losses": [round(s.loss.item(), 6) for s in record.steps],
        }
        figures |= _training_figures(verdict.comparisons, record.eval_loss)
        figures["kinds"] = ", ".join(verdict.failure_kinds) or "-"  # the kinds that decide it; notes are counted
        result.columns.append(verdict_column(target, verdict, figures))
    return result


def _training_figures(comparisons: list, eval_loss: float | None) -> dict[str, Any]:
    """The last step's parameters, the worst gradient, and the oracle's losses (the golden values)."""
    if not any(c.step is not None for c in comparisons):  # findings stopped training's comparison (noise, crash)
        evaluated = [c.golden_value for c in comparisons if c.quantity == "eval loss"]
        return {"eval loss": eval_loss, "oracle: eval loss": evaluated[0] if evaluated else None} if comparisons else {}
    last = max(c.step for c in comparisons if c.step is not None)
    final = [c for c in comparisons if c.step == last and c.quantity == "param"]
    losses = sorted((c for c in comparisons if c.quantity == "loss"), key=lambda c: c.step)
    evaluated = [c.golden_value for c in comparisons if c.quantity == "eval loss"]
    return {
        "max |param - golden| after 3 steps": max(c.error for c in final),
        "param budget (largest, last step)": max(c.budget for c in final),
        "max |grad - golden| (any step)": max((c.error for c in comparisons if c.quantity == "grad"), default=None),
        "eval loss": eval_loss,
        "oracle: logged losses": [round(c.golden_value, 6) for c in losses],
        "oracle: eval loss": evaluated[0] if evaluated else None,
    }


# --- distributed ---------------------------------------------------------------------------------


def distributed_scenario(targets: list[Target], options: Options, progress: Callable[[str], None]) -> ScenarioResult:
    """The two-rank cases, each rank a real process (Gloo on CPU, NCCL on two GPUs): every target's trainer in
    one launch, so the processes' start and imports are paid once, bounded like any target call."""
    from parity.training.launch.processes import launch

    progress(f"distributed: {', '.join(t.name for t in targets)} (two processes)")
    with tempfile.TemporaryDirectory(prefix="parity-report-ddp-") as workdir:
        path = f"{workdir}/verdicts.json"
        arguments = ["--device", options.device, "--dtype", options.dtype, "--json", path,
                     *(a for target in targets for a in ("--target", target.name))]
        launch("parity.training.diffusion.drivers.ranks", arguments, 2, timeout_s=call_bound() or 600)
        with open(path) as handle:
            cases = json.load(handle)["cases"]
    verdicts = {target.name: {key.rpartition(" ")[2]: v for key, v in cases.items()
                              if len(targets) == 1 or key.rpartition(" ")[0] == target.name} for target in targets}
    return distributed_result(targets, verdicts, options)


def distributed_result(targets: list[Target], verdicts: dict[str, dict], options: Options) -> ScenarioResult:
    """The ``distributed`` scenario from ``parity.training.diffusion.drivers.ranks``'s verdicts, per target name (the
    report's scenario, and ``python -m parity ddp``)."""
    result = ScenarioResult(
        "distributed",
        f"two ranks over {'NCCL' if options.device == 'cuda' else 'Gloo'}: unequal counts, one rank empty, "
        "all empty, rank-local normalisation",
        "per tensor on every rank (docs/budget.md); cell = verdict (worst error/budget) and failing kinds",
    )
    result.columns = [distributed_column(target, verdicts[target.name]) for target in targets]
    return result


def distributed_column(target: Target, cases: dict[str, dict]) -> Column:
    """A column from ``parity.training.diffusion.drivers.ranks``'s verdicts: a cell per case, a failure per failing case
    (its kinds and diagnosis, then the verdict's own description)."""
    figures = {
        name: f"holds ({v['worst_ratio']:.3g})" if v["holds"] else f"FAILS: {', '.join(v['kinds'])} ({v['worst_ratio']:.3g})"
        for name, v in cases.items()
    }
    failures = {
        name: f"{', '.join(v['kinds'])}:{' ' + v['diagnosis'] if v.get('diagnosis') else ''}\n{v['worst']}"
        for name, v in cases.items() if not v["holds"]
    }
    notes = {name: v["notes"] for name, v in cases.items() if v["notes"]}
    diagnosis = next((f"{name}: {v['diagnosis']}" for name, v in cases.items() if not v["holds"] and v.get("diagnosis")), None)
    return Column(target.name, target.expect, not failures, figures, failures=failures, notes=notes, diagnosis=diagnosis,
                  worst_ratios={name: v["worst_ratio"] for name, v in cases.items()})


def first_line(message, width: int = 40) -> str:
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
    #: Whether the scenario runs through ``Trainer``: the only way float16 is trained (its loss scaling).
    through_trainer: bool = True


FLOAT16_ONLY_THROUGH_TRAINER = (
    "not run in float16: float16 is trained only as TrainingArguments(fp16=True), whose loss scaling is the "
    "Trainer's; this scenario calls the loss directly (docs/budget.md, float16)"
)
SCENARIOS = {
    s.name: s
    for s in (
        Scenario("dataset-cache", "dataset", dataset_scenario),
        Scenario("diffusion-window", "loss", window_scenario, through_trainer=False),
        Scenario("training-run", "trainer", training_scenario),
        Scenario("distributed", "trainer", distributed_scenario, needs_ddp=True),
    )
}


def run_report(
    targets: list[Target],
    options: Options,
    only: list[str] | None,
    progress: Callable[[str], None],
    scenarios: dict[str, Scenario] = SCENARIOS,
) -> list[ScenarioResult]:
    """Every scenario some target provides the interface for; ``distributed`` only with ``--ddp``.

    ``scenarios``: this wing's own by default; the CLI adds the property table's
    (parity/table/scenario.py), which this wing may not import (docs/design.md, Layout).

    The targets under test (``options.under_test``) run first and lead every table; the others are
    the controls (impl beside a target of yours, the known bugs), marked so that the renderings can
    summarise them."""
    order = {name: k for k, name in enumerate(options.under_test)}
    targets = sorted(targets, key=lambda t: order.get(t.name, len(order)))
    results = []
    for scenario in scenarios.values():
        if only and scenario.name not in only:
            continue
        if scenario.needs_ddp and not options.ddp and not only:
            continue
        if options.dtype == "float16" and not scenario.through_trainer:
            results.append(ScenarioResult(scenario.name, FLOAT16_ONLY_THROUGH_TRAINER, "-"))
            continue
        columns = [t for t in targets if scenario.interface == "any" or t.provides(scenario.interface)]
        yours = [t for t in columns if t.name not in builtin_targets()]
        trusted = [t for t in columns if t not in yours]
        # A target of yours cannot take the other columns with it: each runs on its own in a child
        # (isolation.py), and a call of its that outlives its bound ends its column only.
        results_of_yours = [_run_yours(scenario, target, options, progress) for target in yours]
        result = _run_scenario(scenario, trusted, options, progress) if trusted else None
        result = _merged(result, results_of_yours)
        if result is not None and result.columns:
            by_name = {target.name: target for target in columns}
            for column in result.columns:
                column.control = column.expect != "reference" and column.name not in order
                defects = by_name[column.name].upstream_defects if column.name in by_name else ()
                if defects and not column.holds:
                    column.figures[UPSTREAM_ROW] = (f"{'; '.join(defects)}: python -m parity repro --target {column.name} "
                                                    "--out DIR writes each up")
            results.append(result)
    return results


#: The row that names a failing column's known upstream defects and the command that writes each up.
UPSTREAM_ROW = "upstream defects"
#: The titles of a scenario whose only column is a target that ended its process, or whose call timed out.
CHILD_ENDED = "the target ended the process"
TIMED_OUT = "a target call timed out"


def _run_scenario(
    scenario: Scenario, targets: list[Target], options: Options, progress: Callable[[str], None], name: str = "error"
) -> ScenarioResult:
    """The scenario's result; one that failed to build or run is a failed cell named ``name``, the error
    in full beneath."""
    try:
        return scenario.run(targets, options, progress)
    except Exception as error:  # noqa: BLE001 - a scenario that fails to build or run is a failed cell
        message = f"{type(error).__name__}: {first_line(error, 64)}"
        result = ScenarioResult(scenario.name, "failed to build or run", "-")
        result.columns.append(
            Column(name, "pass", None, {"error": message}, error=message,
                   failures={VERDICT_ROW: f"{type(error).__name__}: {error}"})
        )
        return result


def _run_yours(scenario: Scenario, target: Target, options: Options, progress: Callable[[str], None]) -> ScenarioResult:
    """``target``'s result of the scenario, computed in a child (forked, or spawned on CUDA: isolation.py); a
    child that ends without one (os._exit, a signal), or a target call that outlives its bound
    (parity.safety.bounds), is a crash column naming how and in which call: never as expected (docs/faults.md)."""
    start = start_method(options.device)
    work = functools.partial(_run_scenario, scenario, [target], options, progress, name=target.name)
    if start == "spawn":  # a fresh interpreter: progress said here (a lambda does not pickle), kernel settings again
        progress(f"{scenario.name}: {target.name} (in a fresh process)")
        work = functools.partial(_deterministic_then, options.device,
                                 functools.partial(_run_scenario, scenario, [target], options, _silent, name=target.name))
    try:
        return run_in_child(work, start, target.import_modules)
    except (ChildEnded, CallTimedOut) as ended:
        said = ended.headline if isinstance(ended, CallTimedOut) else str(ended)
        result = ScenarioResult(scenario.name, CHILD_ENDED if isinstance(ended, ChildEnded) else TIMED_OUT, "-")
        result.columns.append(Column(target.name, target.expect, None, {"crash": said}, crashed=said,
                                     failures={VERDICT_ROW: str(ended)}, diagnosis=said))
        return result


def _deterministic_then(device: str, work: Callable[[], ScenarioResult]) -> ScenarioResult:
    from parity.devices import make_deterministic

    make_deterministic(device)
    return work()


def _silent(message: str) -> None:
    """The progress of a spawned child: its parent said it."""


def _merged(result: ScenarioResult | None, yours: list[ScenarioResult]) -> ScenarioResult | None:
    """The isolated targets' columns, in order, before ``result``'s; one oracle column, the first found."""
    if not yours:
        return result
    parts = [*yours, *([result] if result is not None else [])]
    columns, reference = [], None
    for part in parts:
        columns += [column for column in part.columns if column.expect != "reference"]
        reference = reference or next((column for column in part.columns if column.expect == "reference"), None)
    ran = [part for part in parts if part.title not in (CHILD_ENDED, TIMED_OUT)]
    base = result if result is not None else (ran or parts)[0]
    return replace(base, columns=[*columns, *([reference] if reference else [])])
