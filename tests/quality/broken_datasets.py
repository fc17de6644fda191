"""Datasets broken in one corner only: impl's, with ``position_ids`` off by one in every sample of that corner.

One per setting of the three mask switches, one per split with either value of
``drop_last_partial_validation_sequence``, one per kind of exact boundary (the token total on a
sample boundary with and without the extra token, without ``num_samples`` or reaching it exactly; the
stream one token short of a boundary or one token past one, with and without the extra token).
Outside its corner each serves exactly what impl serves. Loaded as targets by name
(``tests.quality.broken_datasets:NAME``): a factory of the harness's config, translated as impl's
own targets translate it.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import product

from impl.gpt_dataset import SPLITS, GPTDataset
from parity.dataset.impl import impl_config

Corner = Callable[[GPTDataset], bool]


class BrokenInOneCorner(GPTDataset):
    """impl's dataset; in its corner, every sample's ``position_ids`` are off by one."""

    corner: Corner

    def __getitem__(self, idx):
        sample = super().__getitem__(idx)
        if self.corner(self):
            sample["position_ids"] = sample["position_ids"] + 1
        return sample


def _masks(setting: tuple[bool, bool, bool]) -> Corner:
    return lambda d: (d.config.reset_position_ids, d.config.reset_attention_mask, d.config.eod_mask_loss) == setting


def _split(split: str, drop: bool) -> Corner:
    return lambda d: (d.config.split, d.config.drop_last_partial_validation_sequence) == (split, drop)


def _boundary(extra: bool, num_samples: bool) -> Corner:
    """The token total of all epochs exactly on a sample boundary; with ``num_samples``, exactly
    ``num_samples * L + extra``, else no ``num_samples`` at all."""

    def corner(d: GPTDataset) -> bool:
        config, total = d.config, d._total_tokens
        reached = total == (config.num_samples or 0) * config.sequence_length + config.extra
        return (
            config.add_extra_token_to_sequence == extra
            and (total - config.extra) % config.sequence_length == 0
            and (reached if num_samples else config.num_samples is None)
        )

    return corner


def _end(extra: bool, leftover: str) -> Corner:
    """The stream one token short of a sample boundary, or one token past one (without ``num_samples``)."""

    def corner(d: GPTDataset) -> bool:
        config, total = d.config, d._total_tokens
        left = (total - config.extra) % config.sequence_length
        wanted = 1 if leftover == "past" else config.sequence_length - 1
        return config.add_extra_token_to_sequence == extra and config.sequence_length > 2 and left == wanted

    return corner


def _flags(setting) -> str:
    return "".join("TF"[not flag] for flag in setting)


CORNERS: dict[str, Corner] = {
    **{f"masks-{_flags(setting)}": _masks(setting) for setting in product((False, True), repeat=3)},
    **{f"split-{split}-drop-{_flags((drop,))}": _split(split, drop) for split in SPLITS for drop in (True, False)},
    **{
        f"boundary-extra-{_flags((extra,))}-{'num-samples' if given else 'no-num-samples'}": _boundary(extra, given)
        for extra in (True, False)
        for given in (False, True)
    },
    **{
        f"end-one-token-{leftover}-extra-{_flags((extra,))}": _end(extra, leftover)
        for extra in (True, False)
        for leftover in ("short", "past")
    },
}



def _factory(name: str, corner: Corner):
    broken = type(name, (BrokenInOneCorner,), {"corner": staticmethod(corner)})
    return lambda documents, config: broken(documents, impl_config(config))


BROKEN = {name: _factory(name, corner) for name, corner in CORNERS.items()}


def __getattr__(name: str):
    """``tests.quality.broken_datasets:NAME`` loads the dataset broken in the corner NAME."""
    try:
        return BROKEN[name]
    except KeyError:
        raise AttributeError(name) from None
