"""Every verdict the training wing's tests pin, as one record each: the trainer and the case it is judged on
(docs/trainer.md, What invariance the suite proves). ``test_verdict_invariance.py`` holds each verdict's words to
themselves under another float path; the tests that pin the words themselves stay where they are
(test_research_objectives.py, test_input_contract.py, test_objectives.py, tests/quality/test_finds_trainer_bug.py).

Run as a module, it prints the words of the named records (all by default) as JSON, for a child process started
under another float path: ``python -m tests.training.verdict_cases --threads 1 [NAME ...]``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from dataclasses import replace

from parity.cases import TrainerCase
from parity.compare import Verdict
from parity.strategies.training import RANK_LOCAL_RUN, UPSTREAM_RUN
from parity.targets import get_target
from parity.training.diffusion.drivers.trainer_run import run_trainer
from parity.training.diffusion.verdict import trainer_verdict
from parity.training.invariance import verdict_words
from tests.training.objective_twins import TWINS
from tests.training.research_objectives import RESEARCH_OBJECTIVES
from tests.training.test_input_contract import EvaluationPaddingAsPad, EvaluationPrependsBos
from tests.training.test_objectives import CORRECT, TELLS_OBJECTIVES_APART

#: name -> (trainer, case): the research trainers, the input-contract cases, the known bugs, the pre-fix twins and
#: the twelve correct trainers.
VERDICT_CASES: dict[str, tuple[object, TrainerCase]] = {
    **{f"research {name}": (trainer, RANK_LOCAL_RUN) for name, trainer in RESEARCH_OBJECTIVES.items()},
    "input-contract: BOS prepended in evaluation": (
        EvaluationPrependsBos,
        replace(TELLS_OBJECTIVES_APART, examples_per_rank=4, prompt_only_rows=(1,), evaluate=True, eval_batch_size=2)),
    "input-contract: padding as pad in evaluation": (EvaluationPaddingAsPad, UPSTREAM_RUN),
    **{bug: (get_target(bug).load("trainer"), TrainerCase()) for bug in ("known-bug:local-mean", "known-bug:logits-local-mean")},
    **{f"twin {name}": (trainer, TELLS_OBJECTIVES_APART) for name, trainer in TWINS.items()},
    **{f"correct {name}": (trainer, RANK_LOCAL_RUN) for name, trainer in CORRECT.items()},
}


def verdict_of(name: str, folder: str, device: str = "cpu") -> tuple[TrainerCase, list, Verdict]:
    """The record's case (on ``device``), its run's records and its verdict."""
    trainer, case = VERDICT_CASES[name]
    case = replace(case, device=device)
    records = [run_trainer(trainer, case, folder)]
    return case, records, trainer_verdict(case, records)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.training.verdict_cases", description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="records of VERDICT_CASES (default: all)")
    parser.add_argument("--threads", type=int, default=0, help="torch's intra-op threads (default: torch's own)")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.names) - set(VERDICT_CASES))
    if unknown:
        parser.error(f"no verdict case {', '.join(unknown)}; the cases are: {', '.join(VERDICT_CASES)}")
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    words = {}
    for name in args.names or VERDICT_CASES:
        with tempfile.TemporaryDirectory() as folder:
            words[name] = verdict_words(verdict_of(name, folder)[2])
    json.dump({"capability": torch.backends.cpu.get_cpu_capability(), "threads": torch.get_num_threads(), "words": words},
              sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
