"""What the records of :mod:`parity.table.rows` build their arguments and examples from, imported only when a
property is used, so reading the table imports neither Hypothesis's strategies of a wing nor torch."""

from __future__ import annotations

from hypothesis import strategies as st

CACHE_BUGS = ("known-bug:cache-alias", "known-bug:cache-accumulate", "megatron-core")


def dataset():
    from parity.strategies import dataset

    return dataset


def corners() -> list[dict]:
    """The dataset corners, each an explicit example (parity.strategies.dataset_corners.corner_cases)."""
    from parity.strategies.dataset_corners import corner_cases

    return [{"case": case} for case in corner_cases()]


def pipeline():
    from parity.strategies import pipeline

    return pipeline


def diffusion():
    from parity.strategies import diffusion

    return diffusion


def training():
    from parity.strategies import training

    return training


def causal():
    from parity.strategies import causal

    return causal


def bad_input():
    from parity.strategies import bad_input

    return bad_input


def every(names) -> dict:
    """A validation property's arguments: one of the declared names (all of them are its explicit examples)."""
    return {"bad": st.sampled_from(tuple(names))}

