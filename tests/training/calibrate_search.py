"""The budget calibrated under search (docs/budget.md, Calibration under search): Hypothesis's
``target()`` steers every correct alternative toward its worst error/budget ratio, and every known
bug toward its smallest ratio on the cases that can show it.

    python -m tests.training.calibrate_search --level window|trainer --dtype D [--examples N] [--seed S]

``window``: the loss targets through accumulation windows, drawn by the window properties' own
strategy (``parity.strategies.diffusion.window_cases``): impl as it runs, impl with each window's rows
re-cut into microbatches of 1 to 4 rows (the regrouping property's correct alternative), and the
local-mean bug; in float64, float32 and bfloat16. ``trainer``: whole Trainer runs, drawn by the
whole-run property's strategy (``parity.strategies.training.trainer_cases``): every correct trainer
of ``tests.training.calibrate_precision`` and ``tests.training.interleavings`` (the float32-upcast
cross-entropies only below float64, where they are correct; in float64 they are a precision
finding) and both trainer bugs, in every way production trains in the dtype (bfloat16: weights and
autocast; float16: autocast with loss scaling, on the CPU through ``parity.training.diffusion.drivers.loss_scaling``).

Each alternative is one Hypothesis search of ``--examples`` examples (generation, then the target
phase), seeded with ``--seed``: a correct one maximises its worst ratio (``target(ratio)``), a bug
minimises it (``target(-ratio)``) over the cases the float64 oracle predicts informative (a local mean
would move some tensor by at least ``parity.budget.INFORMATIVE_MARGIN`` budgets; the others are
counted). Prints the highest (correct) or smallest (bug) ratio reached, its case, and the search's
time; exits 1 if a correct alternative fails or a bug holds on an informative case. Not collected by pytest.
"""

from __future__ import annotations

import argparse
import functools
import math
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

import torch
from hypothesis import HealthCheck, Phase, given, seed, settings, target
from hypothesis import strategies as st

from parity.budget import informativeness
from parity.cases import PUBLISHED_EPS
from parity.devices import DTYPES, TRAINER_DTYPES
from parity.strategies.diffusion import window_cases
from parity.strategies.training import trainer_cases
from parity.targets import get_target
from parity.training.diffusion.drivers.loss_scaling import cpu_loss_scaling
from parity.training.diffusion.drivers.trainer_run import eps_declined, run_trainer
from parity.training.diffusion.drivers.window_cases import model_builder, parity_run
from parity.training.diffusion.drivers.window_run import local_mean_steps
from parity.training.diffusion.verdict import local_mean_prediction, references, trainer_verdict
from tests.training.calibrate_precision import BUGS, CORRECT, WAYS
from tests.training.interleavings import ComputeLossDrawsTrainer, FetchThenDrawTrainer, PredictionStepDrawsTrainer

#: Correct only below float64: in a float64 run their float32 cross-entropy is a precision finding (docs/budget.md, Kinds).
UPCASTS = ("UpcastChunkedCETrainer", "Float32LossTrainer")
INTERLEAVINGS = {cls.__name__: cls for cls in (FetchThenDrawTrainer, ComputeLossDrawsTrainer, PredictionStepDrawsTrainer)}


@dataclass(frozen=True)
class Outcome:
    """One example: its worst error/budget, whether it held, whether it could show a wrong count."""

    ratio: float
    holds: bool
    informative: bool


@dataclass
class Search:
    """What one search reached."""

    name: str
    is_bug: bool
    examples: int = 0
    not_informative: int = 0
    unexpected: int = 0
    best: float | None = None
    best_case: str = ""
    seconds: float = 0.0

    def record(self, case, outcome: Outcome) -> None:
        self.examples += 1
        if self.is_bug and not outcome.informative:
            self.not_informative += 1
            return
        self.unexpected += outcome.holds if self.is_bug else not outcome.holds
        better = self.best is None or (outcome.ratio < self.best if self.is_bug else outcome.ratio > self.best)
        if better:
            self.best, self.best_case = outcome.ratio, repr(case)
        target(-outcome.ratio if self.is_bug else outcome.ratio, label="error / budget")

    def row(self) -> str:
        best = "-" if self.best is None else f"{self.best:.3g}"
        direction = "smallest" if self.is_bug else "highest"
        informative = f", {self.not_informative} not informative" if self.is_bug else ""
        return f"{self.name:62} {direction:>8} {best:>9}  ({self.examples} examples{informative}, {self.seconds:.0f} s)"


def run_search(name: str, is_bug: bool, strategy: st.SearchStrategy, evaluate: Callable, examples: int, seed_: int) -> Search:
    found = Search(name, is_bug)
    start = time.perf_counter()

    @seed(seed_)
    @settings(max_examples=examples, phases=[Phase.generate, Phase.target], database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def search(case):
        found.record(case, evaluate(case))

    search()
    found.seconds = time.perf_counter() - start
    return found


def window_outcome(loss, case, rows: int | None, is_bug: bool) -> Outcome:
    run = parity_run(loss, case, regroup=rows)
    comparisons = run.comparisons()
    if is_bug and run.local_mean is None:  # the prediction at any precision, not only where the verdict needs it
        golden64 = model_builder(replace(case, dtype=torch.float64))()
        run = replace(run, local_mean=local_mean_steps(golden64, [[window] for window in run.draws], run.golden, case.lr))
    informative = not is_bug or run.uninformative() is None
    return Outcome(max(c.ratio for c in comparisons), all(c.holds for c in comparisons), informative)


def window_searches(dtype: str, examples: int, seed_: int, wanted: Callable[[str], bool]) -> list[Search]:
    impl, bug = get_target("impl").load("loss"), get_target("known-bug:local-mean").load("loss")
    cases = window_cases(dtypes=(getattr(torch, dtype),))
    alternatives = (
        ("window: impl", impl, False, st.tuples(cases, st.none())),
        ("window: impl, rows re-cut into 1-4 a microbatch", impl, False, st.tuples(cases, st.integers(1, 4))),
        ("window: known-bug:local-mean", bug, True, st.tuples(cases, st.none())),
    )
    searches = []
    for name, loss, is_bug, strategy in alternatives:
        if not wanted(name):
            continue
        evaluate = functools.partial(window_outcome, loss, is_bug=is_bug)
        searches.append(run_search(f"{name} ({dtype})", is_bug, strategy, lambda drawn, e=evaluate: e(*drawn), examples, seed_))
        print(searches[-1].row(), flush=True)
    return searches


def trainer_outcome(trainer_class, case, is_bug: bool) -> Outcome:
    case = replace(case, eps=PUBLISHED_EPS) if eps_declined(trainer_class, case) else case
    with tempfile.TemporaryDirectory(prefix="parity-calibrate-") as folder:
        records = [run_trainer(trainer_class, case, folder)]
    result = trainer_verdict(case, records, strict_precision=False)
    informative = not is_bug or bool(
        records[0].steps and informativeness(local_mean_prediction(case, records, references(case, records)), case.dtype) is None
    )
    return Outcome(result.worst_ratio, result.holds, informative)


def trainer_searches(dtype: str, examples: int, seed_: int, wanted: Callable[[str], bool]) -> list[Search]:
    ways = WAYS.get(dtype, {dtype: False})
    correct = {**CORRECT, **{name: (lambda cls=cls: cls) for name, cls in INTERLEAVINGS.items()}}
    if dtype == "float64":
        correct = {name: load for name, load in correct.items() if name not in UPCASTS}
    searches = []
    for name, load in {**correct, **BUGS}.items():
        if not wanted(name):
            continue
        trainer_class, is_bug = load(), name in BUGS
        for way, autocast in ways.items():
            strategy = trainer_cases(dtypes=(dtype,)).map(lambda case, a=autocast: replace(case, dtype=dtype, autocast=a))
            searches.append(
                run_search(f"{name}, {way}", is_bug, strategy,
                           lambda case, cls=trainer_class, bug=is_bug: trainer_outcome(cls, case, bug), examples, seed_)
            )
            print(searches[-1].row(), flush=True)
    return searches


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.training.calibrate_search", description=__doc__.splitlines()[0])
    parser.add_argument("--level", choices=("window", "trainer"), required=True)
    parser.add_argument("--dtype", choices=sorted(set(DTYPES) | set(TRAINER_DTYPES)), required=True)
    parser.add_argument("--examples", type=int, default=20, help="examples a search (default: 20)")
    parser.add_argument("--seed", type=int, default=0, help="Hypothesis seed of every search (default: 0)")
    parser.add_argument("--only", action="append", default=[], metavar="TEXT",
                        help="only the alternatives whose name contains TEXT (repeatable; default: all)")
    args = parser.parse_args(argv)
    wanted = lambda name: not args.only or any(text in name for text in args.only)  # noqa: E731
    if args.level == "window" and args.dtype not in DTYPES:
        parser.error(f"--dtype: a window search runs in {', '.join(DTYPES)}; got {args.dtype!r}")
    torch.set_num_threads(1)
    start = time.perf_counter()
    if args.level == "window":
        searches = window_searches(args.dtype, args.examples, args.seed, wanted)
    else:
        with cpu_loss_scaling():
            searches = trainer_searches(args.dtype, args.examples, args.seed, wanted)
    for found in searches:
        print(f"  {found.name}: {found.best_case}")
    unexpected = sum(found.unexpected for found in searches)
    worst = max((f.best for f in searches if not f.is_bug and f.best is not None), default=math.nan)
    least = min((f.best for f in searches if f.is_bug and f.best is not None), default=math.nan)
    print(f"\n{args.level}, {args.dtype}, seed {args.seed}, {args.examples} examples a search, "
          f"{time.perf_counter() - start:.0f} s: worst correct {worst:.3g}, smallest bug {least:.3g}, "
          f"unexpected verdicts {unexpected}")
    return 1 if unexpected else 0


if __name__ == "__main__":
    raise SystemExit(main())
