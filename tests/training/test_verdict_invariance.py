"""Every verdict of the training wing is the same on another float path (docs/trainer.md, What invariance the suite
proves): its kinds, the terms named and the nearest objective, the figures free to move.

* perturbed: each record's run, its observations moved by a seeded quarter of their budgets
  (``parity.training.invariance.perturbed``); a few cheap records in the default run, every record under ``-m long``
  and the nightly job (tox -e nightly);
* another CPU path: every record in a child under ``ATEN_CPU_CAPABILITY=default`` and in one on 1 thread, against one
  on the machine's own kernels and 2 threads (``-m long``);
* CUDA: every record run on the GPU, as it is and perturbed, against the CPU's words (tox -e cuda).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch

from parity.devices import cuda_available
from parity.training.diffusion.verdict import trainer_verdict
from parity.training.invariance import PERTURBATION, perturbed, verdict_words
from tests.training.verdict_cases import VERDICT_CASES, verdict_of

#: One of each kind the default run can afford (about a second each): the research trainer the issue saw named
#: on one CPU and not another, both terms of another, a pre-fix twin, a correct trainer.
CHEAP = ("research llada-sft", "research mdlm", "twin local mean", "correct impl")
SEEDS = (0, 1, 2)


def _marked(name: str):
    return pytest.param(name, marks=() if name in CHEAP else pytest.mark.long, id=name)


@pytest.mark.parametrize("name", [_marked(name) for name in VERDICT_CASES])
def test_a_perturbed_run_gets_the_same_verdict(name, tmp_path):
    case, records, verdict = verdict_of(name, str(tmp_path))
    words = verdict_words(verdict)
    for seed in SEEDS[:1] if name in CHEAP else SEEDS:  # the default run's share: one seed each
        moved = trainer_verdict(case, perturbed(records, verdict.comparisons, seed))
        assert verdict_words(moved) == words, f"seed {seed}:\n{moved.describe()}\n-- unperturbed --\n{verdict.describe()}"


def test_the_perturbation_moves_each_observation_by_at_most_its_share_of_the_budget(tmp_path):
    """Each logged tensor moves, by no more than a quarter of its budget; a correct run's tensors stay within
    their budgets, and four budgets put some outside, so the perturbation reaches the comparisons."""
    case, records, verdict = verdict_of("correct impl", str(tmp_path))
    budgets = {(c.step, c.quantity, c.tensor): c.own_budget for c in verdict.comparisons}
    (moved,) = perturbed(records, verdict.comparisons, seed=0)
    for k, (before, after) in enumerate(zip(records[0].steps, moved.steps, strict=True)):
        pairs = [("loss", None, before.loss, after.loss),
                 *(("grad", n, g, after.grads[n]) for n, g in before.grads.items()),
                 *(("param", n, p, after.params[n]) for n, p in before.params.items())]
        for quantity, tensor, x, y in pairs:
            shift = float((y.double() - x.double()).abs().max())
            budget = budgets[(k, quantity, tensor)]
            assert shift <= PERTURBATION * budget * (1 + 1e-6) + float(torch.finfo(x.dtype).eps * x.abs().max())
            assert shift > 0.0, f"step {k} {quantity} {tensor} did not move"
    def outside(fraction: float) -> list[str]:
        moved = trainer_verdict(case, perturbed(records, verdict.comparisons, 0, fraction=fraction))
        return [c.name for c in moved.comparisons if not c.holds]

    assert not outside(PERTURBATION) and outside(4.0)


def _words_in_a_child(environment: dict[str, str], threads: int) -> dict:
    """Every record's words from a fresh interpreter under ``environment`` on ``threads`` threads."""
    done = subprocess.run([sys.executable, "-m", "tests.training.verdict_cases", "--threads", str(threads)],
                          env={**os.environ, **environment}, capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout)


@pytest.mark.long
def test_another_cpu_path_gets_the_same_verdicts():
    """``ATEN_CPU_CAPABILITY=default`` against the machine's own kernels, 1 thread against 2 (docs/trainer.md, What
    invariance the suite proves). The children run one after the other, so each has the cores it asks for."""
    own = _words_in_a_child({}, threads=2)
    paths = {"1 thread": _words_in_a_child({}, threads=1)}
    if own["capability"] != "DEFAULT":
        paths["ATEN_CPU_CAPABILITY=default"] = _words_in_a_child({"ATEN_CPU_CAPABILITY": "default"}, threads=2)
        assert paths["ATEN_CPU_CAPABILITY=default"]["capability"] == "DEFAULT"
    for path, other in paths.items():
        differ = {name: (own["words"][name], words) for name, words in other["words"].items() if words != own["words"][name]}
        assert not differ, f"{path} against {own['capability']} on {own['threads']} threads: {differ}"


@pytest.mark.cuda
@pytest.mark.skipif(not cuda_available(), reason="no CUDA device visible to torch")
@pytest.mark.parametrize("name", list(VERDICT_CASES))
def test_a_cuda_run_gets_the_cpu_verdict(name, tmp_path):
    """CUDA's float path (cuBLAS, TF32 where enabled, atomics) is the perturbation at full size: the run on the GPU,
    as it is and perturbed, gets the words the CPU's run gets."""
    words = verdict_words(verdict_of(name, str(tmp_path / "cpu"))[2])
    case, records, verdict = verdict_of(name, str(tmp_path / "cuda"), device="cuda")
    assert verdict_words(verdict) == words, verdict.describe()
    for seed in SEEDS:
        assert verdict_words(trainer_verdict(case, perturbed(records, verdict.comparisons, seed))) == words
