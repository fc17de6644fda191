"""The index cache across processes: a second build in a fresh process loads what the first wrote,
and two ranks (Gloo) share one cache, rank 0 building while rank 1 waits, then loads.

Each starts Python processes that import megatron (seconds each, more on a busy machine): ``long``.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys

import pytest
import torch

from oracle.gpt_pipeline import oracle_splits
from parity.dataset.compare import assert_samples_equal
from parity.strategies.pipeline import PIPELINE_CASES
from parity.table.checks.pipeline import Written, build
from parity.targets import get_target
from parity.training.launch.processes import launch

pytestmark = [
    pytest.mark.long,
    pytest.mark.distributed,
    pytest.mark.needs("megatron-core"),
]
CASE = PIPELINE_CASES[0]


@pytest.fixture
def on_disk(tmp_path):
    """The case's prefixes written, and the case pickled, in ``tmp_path``."""
    written = Written(CASE)
    folder = written.folder.name
    with open(tmp_path / "case.pkl", "wb") as stream:
        pickle.dump(CASE, stream)
    yield written, folder, str(tmp_path)


def assert_serves_the_oracle(served: dict, how: str) -> None:
    for number, want in enumerate(oracle_splits(*CASE.reference_arguments())):
        if want is None:
            assert number not in served
            continue
        samples = served[number]["samples"]
        assert len(samples) == len(want), f"split {number} {how}: {len(samples)} samples, oracle {len(want)}"
        for k, sample in enumerate(samples):
            reference = want[k]
            if "dataset_id" in reference:
                assert int(sample.pop("dataset_id")) == reference.pop("dataset_id"), f"split {number}[{k}] {how}"
            assert_samples_equal(sample, reference, f"split {number}[{k}] {how}")


def test_a_fresh_process_loads_the_cache_the_first_build_wrote(on_disk):
    written, folder, out = on_disk
    build(get_target("megatron-core:fixed").load("pipeline"), CASE, written, os.path.join(folder, "cache"))
    subprocess.run([sys.executable, "-m", "tests.dataset.pipeline_rank", f"{out}/case.pkl", folder, out], check=True, timeout=600)
    served = torch.load(os.path.join(out, "rank0.pt"), weights_only=False)
    assert all(all(split["loaded"]) for split in served.values()), {n: s["loaded"] for n, s in served.items()}
    assert_serves_the_oracle(served, "in a fresh process")


def test_rank_0_builds_rank_1_loads_and_both_serve_the_same(on_disk):
    written, folder, out = on_disk
    launch("tests.dataset.pipeline_rank", [f"{out}/case.pkl", folder, out], world_size=2, timeout_s=600)
    rank0, rank1 = (torch.load(os.path.join(out, f"rank{rank}.pt"), weights_only=False) for rank in (0, 1))
    assert not any(any(split["loaded"]) for split in rank0.values()), "rank 0 loaded indices it should have built"
    assert all(all(split["loaded"]) for split in rank1.values()), "rank 1 built indices it should have loaded"
    assert_serves_the_oracle(rank0, "on rank 0")
    assert_serves_the_oracle(rank1, "on rank 1")
