"""Public Hypothesis strategies: the cases the property suite draws, for writing your own properties.

    from parity.strategies import dataset_cases, trainer_cases, window_cases

    @given(case=dataset_cases())
    def test_my_dataset(case): ...

Each area's module holds its strategies and its explicit (upstream) cases: :mod:`parity.strategies.dataset`,
:mod:`parity.strategies.diffusion`, :mod:`parity.strategies.training`; the case types are :mod:`parity.cases`.
"""

from parity.strategies.dataset import (
    MOCK_DATA_CASE,
    UPSTREAM_PR_CASE,
    DatasetCase,
    dataset_cases,
    resumed_cases,
    small_dataset_cases,
)
from parity.strategies.diffusion import SEED_SCENARIO, WindowCase, window_cases
from parity.strategies.training import RANK_LOCAL_RUN, UPSTREAM_RUN, trainer_cases

__all__ = [
    "MOCK_DATA_CASE",
    "RANK_LOCAL_RUN",
    "SEED_SCENARIO",
    "UPSTREAM_PR_CASE",
    "UPSTREAM_RUN",
    "DatasetCase",
    "WindowCase",
    "dataset_cases",
    "resumed_cases",
    "small_dataset_cases",
    "trainer_cases",
    "window_cases",
]
