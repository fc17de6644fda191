"""The reference for megatron-core's blends and splits (docs/dataset.md, Blends and splits), written slowly.

A split string such as ``"969,30,1"`` shares each prefix's documents among train, valid and test;
a blend of several prefixes with weights serves each split from their datasets in proportion.
Three published rules decide it, each written here as plainly as it can be:

* the split: the weights are normalised, laid end to end from 0 to 1 (the book-ends of each split),
  and split ``s`` takes the documents ``round(begin * D)`` up to ``round(end * D)`` of a prefix of
  ``D`` documents; a split of weight 0 has no dataset;
* the sizes: a blended split of ``size`` samples asks each dataset for ``ceil(size * weight)``
  samples, builds ``ceil(ceil(size * weight) * (1 + surplus))`` of them (a margin), and is itself
  as long as the sum of what it asks for;
* the assignment: blended sample ``i`` is served by the dataset whose served count lags its share
  the most, ``weight * max(i, 1) - served``, the first such dataset on a tie, and it serves that
  dataset's next sample.

Floating point is used on purpose, in megatron's order of operations (normalise by the sum, add the
book-ends left to right, normalise again in the blended dataset): the reference must land on the same
side of every rounding, so it does the same arithmetic, one obvious step at a time.
Nothing here imports the implementation or the harness.
"""

from __future__ import annotations

import math

SPLIT_NAMES = ("train", "valid", "test")


def normalized(weights) -> list[float]:
    """Each weight divided by their sum."""
    total = 0.0
    for weight in weights:
        total += float(weight)
    return [float(weight) / total for weight in weights]


def split_weights(split: str) -> list[float]:
    """``"969,30,1"`` -> the three normalised weights; missing trailing weights are 0."""
    parts = [float(part) for part in split.split(",")]
    while len(parts) < len(SPLIT_NAMES):
        parts.append(0.0)
    return normalized(parts)


def split_bookends(split: str) -> list[tuple[float, float] | None]:
    """Where each split begins and ends on [0, 1]; None for a split of weight 0."""
    bookends = []
    begin = 0
    for weight in split_weights(split):
        end = begin + weight
        bookends.append((begin, end) if end > begin else None)
        begin = end
    return bookends


def split_documents(split: str | None, num_documents: int) -> list[range | None]:
    """The documents (by position in the prefix) each split's dataset is built from; with no split
    string (megatron's ``blend_per_split``) every split is built from all of them."""
    if split is None:
        return [range(num_documents) for _ in SPLIT_NAMES]
    ranges = []
    for bookend in split_bookends(split):
        if bookend is None:
            ranges.append(None)
        else:
            begin, end = bookend
            ranges.append(range(int(round(begin * num_documents)), int(round(end * num_documents))))
    return ranges


def requested_samples(weights, size: int) -> list[int]:
    """What a blended split of ``size`` samples asks of each dataset: ``ceil(size * weight)``."""
    return [math.ceil(size * weight) for weight in normalized(weights)]


def built_samples(weights, size: int, surplus: float) -> list[int]:
    """What each dataset builds for it: the request with a margin, ``ceil(request * (1 + surplus))``."""
    return [math.ceil(request * (1 + surplus)) for request in requested_samples(weights, size)]


def blending_indices(weights, size: int) -> tuple[list[int], list[int]]:
    """For each blended sample: which dataset serves it, and which of that dataset's samples.

    ``weights`` are normalised twice, as megatron normalises them once in the builder and once in
    the blended dataset."""
    shares = normalized(normalized(weights))
    served = [0] * len(shares)
    dataset_index, dataset_sample_index = [], []
    for sample in range(size):
        lags = [share * max(float(sample), 1.0) - served[d] for d, share in enumerate(shares)]
        chosen = 0
        for d in range(1, len(lags)):
            if lags[d] > lags[chosen]:
                chosen = d
        dataset_index.append(chosen)
        dataset_sample_index.append(served[chosen])
        served[chosen] += 1
    return dataset_index, dataset_sample_index
