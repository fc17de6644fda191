"""Each class of case the default run must draw has a planted bug that only that class shows
(tests/quality/corner_bugs.py; the two-rank one is held in tests/training/test_ddp.py, which launches it).

Each test runs the property's own check on the explicit example that realizes the class, and asserts that
the example is one the default run holds every target to (the property's explicit examples), so the
default run catches the bug; and that a correct target passes the same example.
"""

from __future__ import annotations

import pytest

from parity.compare import ParityFailure
from parity.strategies.diffusion import LARGE_COUNT_WINDOW
from parity.strategies.training import LARGE_COUNT_RUN
from parity.table.checks.diffusion import check_window_parity
from parity.table.checks.training import check_training_run
from parity.table.rows import PROPERTIES
from parity.targets import get_target
from tests.quality.corner_bugs import HALF_PRECISION_COUNT_LOSS, HalfPrecisionCountLogitsTrainer

pytestmark = pytest.mark.usefixtures("harness_self_check")


def explicit(name: str) -> list:
    (prop,) = [prop for prop in PROPERTIES if prop.name == name]
    return [example["case"] for example in prop.explicit_examples()]


def test_a_count_kept_in_float16_is_caught_on_a_window_that_masks_thousands():
    assert LARGE_COUNT_WINDOW in explicit("diffusion/window-parity")
    with pytest.raises(ParityFailure) as caught:
        check_window_parity(HALF_PRECISION_COUNT_LOSS, LARGE_COUNT_WINDOW)
    assert "normalisation" in caught.value.verdict.failure_kinds
    assert "float16 holds every integer only up to 2048" in str(caught.value)
    check_window_parity(get_target("impl").load("loss"), LARGE_COUNT_WINDOW)


def test_a_trainer_whose_count_is_float16_is_caught_on_a_production_sized_window():
    assert LARGE_COUNT_RUN in explicit("training/any-run-matches")
    with pytest.raises(ParityFailure, match="the window's count is a float16 tensor holding 4848"):
        check_training_run(HalfPrecisionCountLogitsTrainer, LARGE_COUNT_RUN)
    check_training_run(get_target("logits").load("trainer"), LARGE_COUNT_RUN)
