"""The documented example trainer (``# my_pkg/diffusion_trainer.py``), run as written, passes the
whole-run property under the installed transformers: tox.ini runs this on every supported release,
each with its own gradient-accumulation contract (docs/trainer.md, Gradient accumulation by release).
"""

from __future__ import annotations

import re
import types
from pathlib import Path

from parity.cases import TrainerCase
from parity.table.checks.training import check_training_run

REPOSITORY = Path(__file__).resolve().parents[2]
HEADER = "# my_pkg/diffusion_trainer.py\n"


def documented_source() -> str:
    """The one code block that starts with HEADER, in README.md or docs/: a user's module as they would copy it."""
    blocks = [block for path in [REPOSITORY / "README.md", *sorted((REPOSITORY / "docs").glob("*.md"))]
              for block in re.findall(r"```python\n(" + re.escape(HEADER) + r".*?)```", path.read_text(), flags=re.S)]
    assert len(blocks) == 1, f"one documented example trainer ({HEADER.strip()}), found {len(blocks)}"
    return blocks[0]


def documented_trainer():
    """The class ``MyDiffusionTrainer`` of :func:`documented_source`."""
    module = types.ModuleType("my_pkg.diffusion_trainer")
    exec(compile(documented_source(), "my_pkg/diffusion_trainer.py", "exec"), module.__dict__)  # noqa: S102 (our own docs)
    return module.MyDiffusionTrainer


def test_the_documented_trainer_passes_on_the_installed_release():
    """Windows of two microbatches whose counts differ: a trainer divided once too often fails here."""
    assert check_training_run(documented_trainer(), TrainerCase(eval_batch_size=2)) == []
