"""Public Hypothesis strategies: the cases the property suite draws, for writing your own properties.

    from parity.strategies import dataset_cases, window_cases

    @given(case=dataset_cases())
    def test_my_dataset(case): ...

Each area's module holds its case type, its strategies and its explicit (upstream) cases:
:mod:`parity.strategies.dataset`, :mod:`parity.strategies.diffusion`, :mod:`parity.strategies.training`.
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

__all__ = [
    "MOCK_DATA_CASE",
    "SEED_SCENARIO",
    "UPSTREAM_PR_CASE",
    "DatasetCase",
    "WindowCase",
    "dataset_cases",
    "resumed_cases",
    "small_dataset_cases",
    "window_cases",
]
