"""Covering arrays: the few explicit examples that put every corner of a strategy in the default run.

A corner left to the random search is reached only if a draw lands there, and a derandomized run
that misses it misses it every time. A covering array holds every value of every switch, every pair
of values of two switches, and every combination named as required (e.g. all eight settings of
three switches that act together), in far fewer rows than the full product.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import combinations, product
from typing import Any

Row = dict[str, Any]


def labels(row: Mapping[str, Any]) -> list[str]:
    """``"switch: value"`` for each switch of a row: what a strategy passes to ``hypothesis.event``."""
    return [f"{name}: {value}" for name, value in row.items()]


def every_combination(switches: Mapping[str, Sequence[Any]], *names: str) -> list[Row]:
    """Every combination of the values of the named switches (a requirement for :func:`covering_array`)."""
    return [dict(zip(names, values)) for values in product(*(switches[name] for name in names))]


def completable(switches: Mapping[str, Sequence[Any]], possible: Callable[[Row], bool], row: Row) -> bool:
    """``possible`` allows the partial ``row`` and some completion of it (depth first)."""
    if not possible(row):
        return False
    name = next((name for name in switches if name not in row), None)
    return name is None or any(completable(switches, possible, {**row, name: value}) for value in switches[name])


def requirements(
    switches: Mapping[str, Sequence[Any]],
    required: Iterable[Mapping[str, Any]] = (),
    possible: Callable[[Row], bool] = lambda row: True,
) -> list[Row]:
    """What a covering array must hold: the ``required`` combinations, then every pair of values of
    two switches that some possible row holds."""
    pairs = ({a: x, b: y} for a, b in combinations(switches, 2) for x in switches[a] for y in switches[b])
    return [dict(c) for c in [*required, *pairs] if completable(switches, possible, dict(c))]


def covers(row: Mapping[str, Any], combination: Mapping[str, Any]) -> bool:
    return all(name in row and row[name] == value for name, value in combination.items())


def covering_array(
    switches: Mapping[str, Sequence[Any]],
    required: Iterable[Mapping[str, Any]] = (),
    possible: Callable[[Row], bool] = lambda row: True,
) -> list[Row]:
    """Rows (one value per switch) holding every :func:`requirements` combination.

    Greedy and deterministic: a row starts from the first combination not yet held, then takes,
    switch by switch in order, the value that completes the most combinations not yet held (the
    first such value on a tie) among those that leave the row completable. ``possible`` judges a
    partial row.
    """
    wanted = requirements(switches, required, possible)
    rows = []
    while wanted:
        row = dict(wanted[0])
        for name, values in switches.items():
            if name not in row:
                choices = [value for value in values if completable(switches, possible, {**row, name: value})]
                row[name] = max(choices, key=lambda value: sum(covers({**row, name: value}, c) for c in wanted))
        wanted = [combination for combination in wanted if not covers(row, combination)]
        rows.append(row)
    return rows
