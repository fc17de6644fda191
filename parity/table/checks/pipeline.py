"""The pipeline properties: megatron's builder, blends, splits and index cache, over files on disk.

Each check writes the case's prefixes with megatron's own ``IndexedDatasetBuilder``
(:mod:`parity.dataset.files`) into a fresh folder, builds train/valid/test through the target's
``pipeline`` interface, and holds what it built to the references of :mod:`oracle.blend_reference`
and :mod:`oracle.gpt_pipeline`, which read the drawn documents, never the files
(docs/dataset.md, The pipeline). Target code is called through :func:`parity.safety.crash.call_target`.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import tempfile

import numpy as np
from hypothesis import reject

from oracle.blend_reference import SPLIT_NAMES
from oracle.gpt_pipeline import oracle_splits
from parity.cases import PipelineCase
from parity.dataset.compare import assert_samples_equal, sample_difference
from parity.dataset.files import write_prefix
from parity.safety.crash import TargetCrashed, call_target
from parity.strategies.pipeline import varied
from parity.table.checks.dataset import INDEX_ARRAYS
from parity.targets import ConfigDeclined

#: What a pipeline's index cache holds per split of a dataset over one prefix, and per blended split.
DATASET_FILES = ("description.txt", "document_index.npy", "sample_index.npy", "shuffle_index.npy")
BLEND_FILES = ("description.txt", "dataset_index.npy", "dataset_sample_index.npy")


class Written:
    """The case's prefixes on disk, in a fresh folder that lives as long as this object."""

    def __init__(self, case: PipelineCase) -> None:
        self.folder = tempfile.TemporaryDirectory(prefix="parity-pipeline-")
        vocab = case.config.vocab_size
        self.prefixes = [
            write_prefix(documents, vocab, os.path.join(self.folder.name, f"prefix{number}"))
            for number, documents in enumerate(case.prefixes)
        ]

    def cache(self, name: str = "cache") -> str:
        return os.path.join(self.folder.name, name)


def build(pipeline, case: PipelineCase, written: Written, cache: str, fast_cache_load: bool = False) -> list:
    """train, valid and test as the target builds them; a declined config skips the example."""
    call = functools.partial(
        pipeline,
        written.prefixes,
        case.weights,
        case.split,
        case.sizes,
        case.config,
        path_to_cache=cache,
        fast_cache_load=fast_cache_load,
    )
    try:
        return call_target("building train/valid/test", call)
    except ConfigDeclined:
        reject()


def parts(dataset) -> list:
    """The datasets over one prefix a split serves from: a blend's, or the split itself."""
    return list(dataset.datasets) if hasattr(dataset, "dataset_index") else [dataset]


def check_splits_match_reference(pipeline, case: PipelineCase) -> None:
    """Each split is built, or not, as the split string says, from the documents the reference gives
    it of each prefix, asked for the samples the reference asks of it."""
    written = Written(case)
    built, expected = build(pipeline, case, written, written.cache()), oracle_splits(*case.reference_arguments())
    for name, got, want in zip(SPLIT_NAMES, built, expected, strict=True):
        assert (got is None) == (want is None), (
            f"{name}: built {got is not None}, reference {want is not None} (split {case.split!r})"
        )
        if want is None:
            continue
        got_parts = parts(got)
        assert len(got_parts) == len(want.datasets), f"{name}: {len(got_parts)} dataset(s), reference {len(want.datasets)}"
        for number, (part, documents, reference) in enumerate(zip(got_parts, want.documents, want.datasets)):
            indices = [int(d) for d in np.asarray(part.indices)]
            assert indices == list(documents), (
                f"{name} of prefix {number} ({len(case.prefixes[number])} documents, split {case.split!r}) is built from "
                f"documents {_span(indices)}, reference {_span(list(documents))}"
            )
            assert part.num_samples == reference.config.num_samples, (
                f"{name} of prefix {number} asks for {part.num_samples} samples, reference {reference.config.num_samples}"
            )


def check_blend_matches_reference(pipeline, case: PipelineCase) -> None:
    """Each blended split serves, at every index, the dataset and the sample of it that the greedy
    reference assignment gives; its length is the sum of what it asks of each dataset."""
    written = Written(case)
    built, expected = build(pipeline, case, written, written.cache()), oracle_splits(*case.reference_arguments())
    for name, got, want in zip(SPLIT_NAMES, built, expected, strict=True):
        if want is None or not want.blended:
            continue
        for array in ("dataset_index", "dataset_sample_index"):
            values, reference = np.asarray(getattr(got, array)), np.array(getattr(want, array))
            assert values.shape == reference.shape, (
                f"{name} {array} has {values.shape[0]} entries, reference {reference.shape[0]}"
            )
            differing = np.flatnonzero(values != reference)
            assert not differing.size, (
                f"{name} {array} differs from the reference at {differing.size} blended index(es), first at "
                f"{differing[0]}: {values[differing[0]]}, reference {reference[differing[0]]} (weights {case.weights})"
            )


def check_pipeline_matches_oracle(pipeline, case: PipelineCase) -> None:
    """Every sample every split serves equals the oracle's, bit for bit, and each dataset's index
    arrays are the reference builder's (its document ids counted from the prefix's first document)."""
    written = Written(case)
    built, expected = build(pipeline, case, written, written.cache()), oracle_splits(*case.reference_arguments())
    assert_splits_serve(built, expected, "")


def assert_splits_serve(built, expected, how: str) -> None:
    for name, got, want in zip(SPLIT_NAMES, built, expected, strict=True):
        if want is None:
            continue
        for number, (part, documents, reference) in enumerate(zip(parts(got), want.documents, want.datasets)):
            assert_indices_equal(part, reference, documents.start, f"{name} of prefix {number}{how}")
        assert len(got) == len(want), f"len({name}{how}) = {len(got)}, oracle {len(want)}"
        for k in range(len(want)):
            sample = dict(call_target(f"serving {name}[{k}]{how}", got.__getitem__, k))
            reference = want[k]
            if "dataset_id" in reference:
                served, dataset = sample.pop("dataset_id", None), reference.pop("dataset_id")
                assert served is not None and int(served) == dataset, (
                    f"{name}[{k}]{how} comes from dataset {served}, oracle {dataset}"
                )
            assert_samples_equal(sample, reference, f"{name}[{k}]{how}")


def assert_indices_equal(part, reference, first_document: int, where: str) -> None:
    for array in (*INDEX_ARRAYS, "sample_index"):
        got, want = np.asarray(getattr(part, array)), reference.indices[array]
        if array == "document_index":
            want = want + first_document
        assert got.shape == want.shape, f"{where}: {array} has shape {got.shape}, reference {want.shape}"
        differing = np.flatnonzero((got != want).reshape(len(got), -1).any(axis=1))
        assert not differing.size, (
            f"{where}: {array} differs from the reference at {differing.size} row(s), first at {differing[0]}: "
            f"{got[differing[0]].tolist()}, reference {want[differing[0]].tolist()}"
        )


def _span(documents: list[int]) -> str:
    return f"{documents[0]}..{documents[-1]}" if documents else "none"


# --- the index cache ---------------------------------------------------------------------------------


def cache_files(folder: str) -> dict[str, bytes]:
    """Every file of a cache folder and its contents."""
    if not os.path.isdir(folder):
        return {}
    files = {}
    for name in sorted(os.listdir(folder)):
        with open(os.path.join(folder, name), "rb") as stream:
            files[name] = stream.read()
    return files


def check_cache_reloads(pipeline, case: PipelineCase) -> None:
    """A first build writes its indices to ``path_to_cache``, a second one loads them without
    writing anything, and what the second serves equals a build in a fresh folder and the oracle."""
    written = Written(case)
    cache = written.cache()
    build(pipeline, case, written, cache)
    first = cache_files(cache)
    assert first, f"the first build wrote no index cache in path_to_cache ({cache})"
    present = [name for name, kept in zip(SPLIT_NAMES, oracle_splits(*case.reference_arguments())) if kept is not None]
    missing = [name for name in present if not any(f"-{name}-" in file for file in first)]
    assert not missing, f"the first build wrote no cache files for {', '.join(missing)}: {sorted(first)}"
    loaded = build(pipeline, case, written, cache)
    second = cache_files(cache)
    changed = sorted(name for name in second if first.get(name) != second[name])
    assert not changed, f"the second build over the same cache rewrote or added {changed}: it did not load the cache"
    fresh = build(pipeline, case, written, written.cache("fresh"))
    expected = oracle_splits(*case.reference_arguments())
    assert_splits_serve(loaded, expected, " (loaded from the cache)")
    assert_splits_serve(fresh, expected, " (built in a fresh cache folder)")


def check_cache_key_separates_configs(pipeline, case: PipelineCase, variation: str) -> None:
    """Two configs whose indices differ never share cache files: a build of the second over the
    first's cache serves what the second's build in a fresh folder serves. A shared file is named,
    with the fields the two configs differ in."""
    other = varied(case, variation)
    written = Written(case)
    shared = written.cache()
    build(pipeline, case, written, shared)
    by_first = cache_files(shared)
    loaded = build(pipeline, other, written, shared)
    fresh_folder = written.cache("fresh")
    build(pipeline, other, written, fresh_folder)
    reused = sorted(set(by_first) & set(cache_files(fresh_folder)))
    expected = oracle_splits(*other.reference_arguments())
    try:
        assert_splits_serve(loaded, expected, f" (built over the cache of a config with other {variation})")
    except AssertionError as failure:
        raise AssertionError(
            f"the index cache is shared by configs that must not share it: {_differences(case, other)}; "
            f"the second loaded {', '.join(reused) or 'files'} written for the first; {failure}"
        ) from failure


def check_fast_cache_load_over_stale_files(pipeline, case: PipelineCase) -> list[str]:
    """The hazard of megatron's ``fast_cache_load``, which takes every cache file as valid without
    looking: after the prefixes are rewritten with other documents (the same ones, in reverse order),
    a build that trusts the cache serves indices made for the old files. The note says how many
    samples that changed; a target that checks its cache against the files gets none."""
    per_split = dataclasses.replace(case, split=None)  # fast_cache_load takes no split string
    written = Written(per_split)
    cache = written.cache()
    build(pipeline, per_split, written, cache)
    rewritten = dataclasses.replace(per_split, prefixes=tuple(documents[::-1] for documents in per_split.prefixes))
    for prefix, documents in zip(written.prefixes, rewritten.prefixes):
        write_prefix(documents, case.config.vocab_size, prefix)
    trusting = functools.partial(
        pipeline,
        written.prefixes,
        rewritten.weights,
        None,
        rewritten.sizes,
        rewritten.config,
        path_to_cache=cache,
        fast_cache_load=True,
    )
    try:
        trusted = call_target("building train/valid/test with fast_cache_load", trusting)
        stale, total = stale_samples(trusted, oracle_splits(*rewritten.reference_arguments()))
    except ConfigDeclined as declined:  # a release without fast_cache_load has no such hazard
        return [f"fast_cache_load not checked: {declined}"]
    except TargetCrashed as crash:
        return [f"fast_cache_load trusted an index cache written for other files at the same prefixes, and {crash}"]
    if not stale:
        return []
    return [
        f"fast_cache_load trusted an index cache written for other files at the same prefixes: {stale} of "
        f"{total} samples differ from the oracle of the files now there (the cache is keyed by the prefix path, not its files)"
    ]


def stale_samples(built, expected) -> tuple[int, int]:
    """How many of the samples the oracle serves a build serves otherwise (or not at all), of how many."""
    stale = total = 0
    for got, want in zip(built, expected, strict=True):
        for k in range(0 if want is None else len(want)):
            total += 1
            try:
                sample, reference = dict(call_target(f"serving [{k}]", got.__getitem__, k)), want[k]
            except TargetCrashed:
                stale += 1
                continue
            if sample.pop("dataset_id", None) != reference.pop("dataset_id", None) or sample_difference(sample, reference):
                stale += 1
    return stale, total


def _differences(first: PipelineCase, second: PipelineCase) -> str:
    fields = []
    for name in ("split", "sizes", "weights"):
        if getattr(first, name) != getattr(second, name):
            fields.append(f"{name} {getattr(first, name)!r} -> {getattr(second, name)!r}")
    for field in dataclasses.fields(first.config):
        a, b = getattr(first.config, field.name), getattr(second.config, field.name)
        if a != b:
            fields.append(f"{field.name} {a!r} -> {b!r}")
    return "the configs differ in " + ", ".join(fields)
