"""``python -m parity repro`` on the field's own loops: a file per defect that needs only the library
(parity.fleet.repro_loops; docs/causal-lm.md, The field's own loops, Reproducers).

Each test runs the command end to end, then runs what it wrote in a fresh virtual environment that sees torch, the
library, what the library declares it needs, and pytest, but neither the harness nor transformers: each file fails
there on the library as installed, with its message, and passes beside its fixed companion.
"""

from __future__ import annotations

import re
import subprocess
import sys
import venv
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from parity.fleet.repro_check import run_file
from tests.fleet.test_repro import top_level_imports

#: A hunt, then each file run four times (on the library and on its fix, here and in the bare environment), each a
#: pytest session importing the library: about a minute for litgpt's one file, two for torchtune's three.
pytestmark = [pytest.mark.long, pytest.mark.usefixtures("harness_self_check")]


def repro(target: str, out: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "parity", "repro", "--target", target, "--out", str(out)],
                          capture_output=True, text=True, timeout=900, check=False)


def needed(*names: str) -> list:
    """The installed distributions ``names`` and pytest need: each with every one its metadata requires (extras
    aside) that is installed here."""
    found, todo = {}, [*names, "torch", "pytest"]
    while todo:
        name = re.sub(r"[-_.]+", "-", todo.pop()).lower()
        if name in found:
            continue
        try:
            found[name] = distribution(name)
        except PackageNotFoundError:  # required but not installed here (litgpt's jsonargparse): never imported
            continue
        requirements = (Requirement(line) for line in found[name].requires or ())
        todo += [r.name for r in requirements if r.marker is None or r.marker.evaluate({"extra": ""})]
    return list(found.values())


def bare_python(folder: Path, *libraries: str) -> str:
    """A fresh virtual environment that sees only what :func:`needed` lists: its files linked into one folder that a
    ``.pth`` file puts on the path. The harness and transformers are not among them."""
    venv.create(folder, with_pip=False)
    linked = folder / "linked"
    linked.mkdir()
    for dist in needed(*libraries):
        assert dist.metadata["Name"].lower() not in ("parity-harness", "transformers"), dist.metadata["Name"]
        for top in {Path(str(file)).parts[0] for file in dist.files or ()} - {".."}:
            if not (linked / top).exists():
                (linked / top).symlink_to(Path(dist.locate_file(top)).resolve())
    (site,) = folder.glob("lib/python*/site-packages")
    (site / "linked.pth").write_text(f"{linked}\n")
    python = str(folder / "bin" / "python")
    for absent in ("parity", "transformers"):
        found = subprocess.run([python, "-c", f"import {absent}"], capture_output=True, cwd=folder, check=False)
        assert found.returncode != 0, f"{absent} is importable in the bare environment"
    return python


def written_up(target: str, tmp_path: Path, names: list[str], messages: list[str], imports: set[str]) -> None:
    """``python -m parity repro --target TARGET`` keeps a file per name, each failing with its message, importing only
    ``imports``; in the bare environment each fails on the library again and passes on its fix."""
    from parity.fleet.repro_loops import LIBRARIES

    ran = repro(target, tmp_path / "out")
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    paths = sorted((tmp_path / "out").iterdir())
    assert [path.name for path in paths] == names, ran.stdout[-3000:]
    python = bare_python(tmp_path / "venv", *LIBRARIES[target].packages)
    for path, message in zip(paths, messages, strict=True):
        assert f"{path}  (standalone): AssertionError: {message}" in ran.stdout, ran.stdout[-3000:]
        assert top_level_imports(path) == imports, path
        failed = run_file(path, python=python)
        assert failed.returncode == 1 and f"AssertionError: {message}" in failed.stdout, failed.stdout[-3000:]
        fixed = run_file(path, LIBRARIES[target].fixed, python=python)
        assert fixed.returncode == 0, fixed.stdout[-3000:]


@pytest.mark.needs("litgpt")
def test_litgpt_s_fit_is_written_up_for_litgpt_alone(tmp_path):
    """Per-microbatch means, averaged (litgpt/finetune/full.py:284-285): one file."""
    written_up("litgpt:fit", tmp_path, ["test_litgpt_fit__per_microbatch_means.py"],
               ["fit weighs each microbatch by 1 / (its own supervised count x gradient_accumulation_iters)"],
               {"copy", "lightning", "litgpt", "torch"})


@pytest.mark.needs("torchtune")
def test_torchtune_s_recipe_is_written_up_for_torchtune_alone(tmp_path):
    """The count before the shift, an empty microbatch's NaN logged loss, an empty window's NaN gradients: three files,
    though the hunt's failing case shows only the first (the others come from the suite's cases)."""
    written_up("torchtune:full-finetune", tmp_path,
               [f"test_torchtune_full_finetune__{name}.py"
                for name in ("count_before_the_shift", "empty_microbatch", "empty_window")],
               ["the recipe counts the labels before the shift (recipes/full_finetune_distributed.py:778-781)",
                "a microbatch that supervises nothing after the shift",
                "no label of the window is supervised"],
               {"contextlib", "copy", "importlib", "functools", "pathlib", "torch", "torchtune", "torchdata"})
