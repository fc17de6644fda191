"""One rank (or one fresh process) building megatron's pipeline over prefixes already on disk.

``python -m tests.dataset.pipeline_rank CASE FOLDER OUT``: ``CASE`` a pickled ``PipelineCase``
whose prefixes lie in ``FOLDER`` as ``prefix0``, ``prefix1``, ... with the index cache in
``FOLDER/cache``; it builds train/valid/test through ``megatron-core:fixed``'s pipeline, serves every
sample of every split and saves them, with which index arrays it loaded from the cache (numpy
memory maps) rather than built, to ``OUT/rank<RANK>.pt``. Launched as ranks
(``parity.training.launch.processes.launch``) it joins their process group first.
"""

from __future__ import annotations

import os
import pickle
import sys

import numpy as np
import torch


def main(case_path: str, folder: str, out: str) -> None:
    if "RANK" in os.environ:
        from parity.training.launch.processes import init_process_group

        init_process_group()
    from parity.targets import get_target

    with open(case_path, "rb") as stream:
        case = pickle.load(stream)
    prefixes = [os.path.join(folder, f"prefix{number}") for number in range(len(case.prefixes))]
    pipeline = get_target("megatron-core:fixed").load("pipeline")
    splits = pipeline(prefixes, case.weights, case.split, case.sizes, case.config, path_to_cache=os.path.join(folder, "cache"))
    served = {}
    for number, split in enumerate(splits):
        if split is None:
            continue
        parts = list(split.datasets) if hasattr(split, "datasets") else [split]
        served[number] = {
            "samples": [dict(split[k]) for k in range(len(split))],
            "loaded": [isinstance(part.document_index, np.memmap) for part in parts],
        }
    torch.save(served, os.path.join(out, f"rank{os.environ.get('RANK', 0)}.pt"))


if __name__ == "__main__":
    main(*sys.argv[1:])
