"""The dataset strategies reach every corner docs/dataset.md names, measured on drawn cases.

A few hundred generated cases (no checks run on them) must include every split with either value of
``drop_last_partial_validation_sequence``, token totals exactly on a sample boundary with and
without the extra token and with and without ``num_samples``, a separately shuffled final epoch,
empty documents, in-vocabulary pads in the data, and every cache switch.
"""

from __future__ import annotations

from hypothesis import HealthCheck, Phase, given, settings

from oracle.gpt_indices import num_epochs, separate_final_epoch
from parity.cases import tokens_per_epoch
from parity.strategies.dataset import dataset_cases

EXAMPLES = 200


def corners(case) -> set[tuple]:
    config = case.config
    tokens = tokens_per_epoch(case.documents)
    epochs = num_epochs(tokens, config)
    on_boundary = (epochs * tokens - config.extra) % config.sequence_length == 0
    found = {
        ("split", config.split, config.drop_last_partial_validation_sequence),
        ("boundary", on_boundary, config.add_extra_token, config.num_samples is not None),
        ("separate final epoch", separate_final_epoch(tokens, epochs, config)),
        ("cache", config.caches_masks),
        ("num_epochs given", config.num_epochs is not None),
    }
    if any(len(document) == 0 for document in case.documents):
        found.add(("empty document",))
    if config.pad_id >= 0 and any((document == config.pad_id).any() for document in case.documents):
        found.add(("pad in the data",))
    if config.num_samples is not None and epochs * tokens == config.num_samples * config.sequence_length + config.extra:
        found.add(("num_samples reached exactly",))
    return found


def test_the_strategies_reach_every_corner():
    seen: set[tuple] = set()

    @settings(max_examples=EXAMPLES, phases=[Phase.generate], derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(dataset_cases())
    def draw(case):
        seen.update(corners(case))

    draw()
    wanted = {("split", split, drop) for split in ("train", "valid", "test") for drop in (True, False)}
    wanted |= {("boundary", True, extra, given) for extra in (True, False) for given in (True, False)}
    wanted |= {("separate final epoch", True), ("separate final epoch", False), ("cache", True), ("cache", False)}
    wanted |= {("empty document",), ("pad in the data",), ("num_samples reached exactly",), ("num_epochs given", True)}
    assert wanted <= seen, f"never drawn in {EXAMPLES} cases: {sorted(wanted - seen)}"
