"""The reproducer files ``python -m parity repro`` writes (docs/dataset.md, Reproducers): one writer per kind of
finding, each turning a shrunk failing example into a short pytest file.

* a sample of a dataset property: the documents, the config, the calls in order and the reference's value of
  the key that differs first, building the target with its own package only (megatron-core, impl, your module);
* megatron's index cache key: its builder twice over one cache folder, the second config differing in a field
  the key leaves out;
* a loss or trainer property: the case pinned with ``@example``, through the harness's public API.

The writers compute what fails first with the harness at write time; the files never import it (but the last).
"""

from __future__ import annotations

import dataclasses
import platform
import textwrap
from importlib.metadata import PackageNotFoundError, version

import numpy as np
import torch

from parity.targets import Target

#: The dataset properties whose failure is one sample that differs from the reference.
SAMPLE_PROPERTIES = ("dataset/matches-oracle", "dataset/resume-agrees")
PIPELINE_PROPERTIES = ("pipeline/cache-key-separates-configs",)
#: Properties whose reproducer uses the harness's public API (their reference is a model run).
HARNESS_PROPERTIES_OF = ("loss", "trainer")
#: The megatron-core targets (their standalone code constructs megatron's classes itself).
MEGATRON = ("megatron-core", "megatron-core:fixed")


# --- literals -----------------------------------------------------------------------------------


def _array(values) -> str:
    return f"np.array({np.asarray(values).tolist()!r}, dtype=np.int64)"


def _tensor(tensor: torch.Tensor) -> str:
    return f"torch.tensor({tensor.tolist()!r}, dtype={tensor.dtype})"


def _documents(documents, indent: str = "    ") -> str:
    return "[\n" + "".join(f"{indent}{_array(document)},\n" for document in documents) + indent[:-4] + "]"


def versions(*packages: str) -> str:
    found = []
    for package in packages:
        try:
            found.append(f"{package} {version(package)}")
        except PackageNotFoundError:
            continue
    return ", ".join([*found, f"Python {platform.python_version()}"])


def _header(prop, target: Target, command: str, packages: tuple[str, ...], sentence: str) -> str:
    return textwrap.dedent(f'''\
        """{target.name}: {prop.name} fails: {sentence}

        Failed on {versions(*packages)}.
        Regenerate: {command}
        Written by the parity harness (python -m parity repro); it needs only the packages it imports.
        """
        ''')


def _sentence(prop) -> str:
    doc = (prop.check_function().__doc__ or prop.name).strip().split("\n\n")[0]
    return " ".join(doc.split()).removeprefix("Property 1: ").removeprefix("Property 2: ")


# --- how a dataset target is built in a file of its own -------------------------------------------


MEGATRON_IMPORTS = """\
import numpy as np
import torch
from megatron.core.datasets.gpt_dataset import GPTDataset, GPTDatasetConfig
"""

IN_MEMORY_DOCUMENTS = '''

class Documents:
    """What GPTDataset reads from an IndexedDataset, held in memory."""

    def __init__(self, documents):
        self.documents = documents
        self.sequence_lengths = np.array([len(d) for d in documents], dtype=np.int32)

    def __len__(self):
        return len(self.documents)

    def __getitem__(self, idx):
        return self.documents[idx]

    def get(self, idx, offset=0, length=None):
        document = self.documents[idx]
        return document[offset:] if length is None else document[offset:offset + length]
'''


def _tokenizer(config) -> str:
    return textwrap.dedent(f"""

        class Tokenizer:
            vocab_size, eod, pad = {config.vocab_size}, {config.eod_id}, {config.pad_id}
            unique_identifiers = {{"class": "Tokenizer", "vocab_size": vocab_size, "eod": eod, "pad": pad}}
        """)


def _megatron_build(config) -> tuple[str, str, str]:
    """(imports and helpers, the config line, the expression that builds the dataset) for megatron-core's GPTDataset."""
    helpers = MEGATRON_IMPORTS + "from megatron.core.datasets.utils import Split\n" + IN_MEMORY_DOCUMENTS + _tokenizer(config)
    build = (f"GPTDataset(Documents(DOCUMENTS), None, np.arange(len(DOCUMENTS), dtype=np.int32), "
             f"{config.num_samples!r}, Split.{config.split}, GPTDatasetConfig(tokenizer=Tokenizer(), **CONFIG))")
    return helpers, f"CONFIG = {_megatron_keywords(config)}\n", build


#: The harness's config fields a pipeline variation may change, as megatron's GPTDatasetConfig names them.
MEGATRON_FIELDS = {"random_seed": "random_seed", "sequence_length": "sequence_length",
                   "add_extra_token": "add_extra_token_to_sequence",
                   "drop_last_partial_validation_sequence": "drop_last_partial_validation_sequence"}


def _megatron_keywords(config) -> str:
    return "dict(" + ", ".join(f"{name}={value!r}" for name, value in (
        ("random_seed", config.random_seed), ("sequence_length", config.sequence_length),
        ("reset_position_ids", config.reset_position_ids), ("reset_attention_mask", config.reset_attention_mask),
        ("eod_mask_loss", config.eod_mask_loss), ("create_attention_mask", config.create_attention_mask),
        ("drop_last_partial_validation_sequence", config.drop_last_partial_validation_sequence),
        ("add_extra_token_to_sequence", config.add_extra_token),
    )) + ")"


def _class_build(dataset_class: type, config) -> tuple[str, str, str]:
    """impl's (or any) dataset class taking ``(documents, config)`` with impl's own config class."""
    from parity.dataset.impl import impl_config

    converted = impl_config(config)
    fields = ", ".join(f"{f.name}={getattr(converted, f.name)!r}" for f in dataclasses.fields(converted))
    helpers = textwrap.dedent(f"""\
        import numpy as np
        import torch
        from {type(converted).__module__} import {type(converted).__name__}
        from {dataset_class.__module__} import {dataset_class.__qualname__} as Dataset
        """)
    return helpers, f"CONFIG = {type(converted).__name__}({fields})\n", "Dataset(DOCUMENTS, CONFIG)"


def _factory_build(factory_path: str, config) -> tuple[str, str, str]:
    """A target of yours: its factory, handed the config as a namespace of the harness's fields."""
    module, _, attribute = factory_path.partition(":")
    fields = ", ".join(f"{f.name}={getattr(config, f.name)!r}" for f in dataclasses.fields(config))
    helpers = textwrap.dedent(f"""\
        from types import SimpleNamespace

        import numpy as np
        import torch
        from {module} import {attribute} as make_dataset
        """)
    return helpers, f"CONFIG = SimpleNamespace({fields})\n", "make_dataset(DOCUMENTS, CONFIG)"


def dataset_builder(target: Target, config) -> tuple[str, str, str, tuple[str, ...]]:
    """How the file builds ``target``'s dataset: (imports and helpers, the config line, the build
    expression, the packages it needs)."""
    if target.name in MEGATRON:
        return (*_megatron_build(config), ("megatron-core", "numpy", "torch"))
    module = target.dataset.partition(":")[0]
    if module.startswith("parity."):  # a harness adapter: the class it returns is the target's own code
        from parity.dataset_config import upstream_config, upstream_documents

        built = target.load("dataset")(upstream_documents(0), upstream_config())
        return (*_class_build(type(built), config), ("numpy", "torch"))
    return (*_factory_build(target.dataset, config), (module.partition(".")[0], "numpy", "torch"))


# --- what fails first, found with the harness at write time ----------------------------------------


def first_differing_call(target: Target, prop_name: str, arguments: dict) -> tuple[list, str, torch.Tensor] | None:
    """(the calls in order, the key, the reference's tensor) of the first sample that differs, or None."""
    from oracle.gpt_dataset import OracleGPTDataset
    from parity.dataset.compare import sample_difference
    from parity.table.checks.dataset import make, serve_plan

    factory = target.load("dataset")
    if prop_name == "dataset/matches-oracle":
        case = dataclasses.replace(arguments["case"], on_disk=False)
        dataset = make(factory, case)
        plan = serve_plan(dataset, case)
    else:
        case, resume_at = arguments["resumed"]
        case = dataclasses.replace(case, on_disk=False)
        dataset = make(factory, case)
        plan = [*range(resume_at, len(dataset)), *range(resume_at)]
    oracle = OracleGPTDataset(case.documents, case.config)
    for call, idx in enumerate(plan):
        got, want = dataset[idx], oracle[idx]
        if sample_difference(got, want) is not None:
            key = next(k for k in sorted(want) if k not in got or not torch.equal(got[k], want[k]))
            return case, plan[: call + 1], key, want[key]
    return None


SAMPLE_TEST = '''

DOCUMENTS = {documents}
{config}
#: dataset[k] for each k in this order, on one fresh dataset; the last one serves the sample that differs.
SERVED = {served!r}
#: What the last one's {key} must be: the reference's (a slow re-derivation from the documents alone).
EXPECTED = {expected}


def test_{slug}():
    dataset = {build}
    for k in SERVED[:-1]:
        dataset[k]
    got = dataset[SERVED[-1]]["{key}"]
    assert got.dtype == EXPECTED.dtype and got.shape == EXPECTED.shape, f"{key}: {{got.dtype}} {{tuple(got.shape)}}"
    differing = (got != EXPECTED).nonzero().tolist()
    assert not differing, (
        f"dataset[{{SERVED[-1]}}] after serving {{SERVED[:-1]}}: {key} differs at {{len(differing)}} position(s), "
        f"first at {{tuple(differing[0])}}: got {{got[tuple(differing[0])].item()}}, expected "
        f"{{EXPECTED[tuple(differing[0])].item()}}"
    )
'''


def write_sample_reproducer(prop, target: Target, arguments: dict, command: str, build_as: Target | None = None) -> str | None:
    """The first sample ``target`` serves wrong, as a file; ``build_as``: the same file building that target instead
    (its fixed companion, which the file must pass on)."""
    found = first_differing_call(target, prop.name, arguments)
    if found is None:
        return None
    case, served, key, expected = found
    helpers, config_line, build, packages = dataset_builder(build_as or target, case.config)
    return (_header(prop, target, command, packages, _sentence(prop)) + "\n" + helpers + SAMPLE_TEST.format(
        documents=_documents(case.documents), config=config_line, served=served, key=key, expected=_tensor(expected),
        build=build, slug=slug(prop.name)))


# --- megatron's pipeline: its index cache key ------------------------------------------------------


PIPELINE_TEST = '''
import torch.distributed as dist
from megatron.core.datasets.blended_megatron_dataset_builder import BlendedMegatronDatasetBuilder
from megatron.core.datasets.indexed_dataset import DType, IndexedDatasetBuilder

PREFIXES = {prefixes}
WEIGHTS, SPLIT, SIZES = {weights!r}, {split!r}, {sizes!r}
FIRST = {first}
#: The second config differs from the first in {variation} only, which changes its indices.
SECOND = {{**FIRST, {changed}}}
#: {split_name}[{index}] {key} of the second config, as the reference derives it from the documents alone.
EXPECTED = {expected}


def write(folder):
    """Each prefix's documents as megatron's .bin/.idx files, as its preprocessing writes them."""
    paths = []
    for number, documents in enumerate(PREFIXES):
        path = str(folder / f"prefix{{number}}")
        builder = IndexedDatasetBuilder(path + ".bin", dtype=DType.optimal_dtype(Tokenizer.vocab_size))
        for document in documents:
            builder.add_item(torch.from_numpy(document))
            builder.end_document()
        builder.finalize(path + ".idx")
        paths.append(path)
    return paths


def build(prefixes, cache, config):
    megatron = GPTDatasetConfig(blend=(prefixes, WEIGHTS), split=SPLIT, path_to_cache=cache, tokenizer=Tokenizer(), **config)
    return BlendedMegatronDatasetBuilder(GPTDataset, list(SIZES), lambda: True, megatron).build()


def test_{slug}(tmp_path):
    dist.init_process_group("gloo", store=dist.FileStore(str(tmp_path / "store"), 1), rank=0, world_size=1)
    try:
        prefixes, cache = write(tmp_path), str(tmp_path / "cache")
        build(prefixes, cache, FIRST)
        got = build(prefixes, cache, SECOND)[{split_number}][{index}]["{key}"]  # over the first config's cache
    finally:
        dist.destroy_process_group()
    assert torch.equal(got, EXPECTED), (
        f"{split_name}[{index}] {key}, built over the index cache of a config that differs in {variation} only: "
        f"got {{got.tolist()}}, expected {{EXPECTED.tolist()}}: the second build loaded the first one's indices"
    )
'''


def write_pipeline_reproducer(prop, target: Target, arguments: dict, command: str, build_as: Target | None = None) -> str | None:
    """megatron's builder twice over one cache folder; None where the two builds differ in more than a config
    field (a split string or sizes: the cache key holds those) or no sample differs."""
    from oracle.blend_reference import SPLIT_NAMES
    from oracle.gpt_pipeline import oracle_splits
    from parity.strategies.pipeline import varied
    from parity.table.checks.pipeline import Written, build

    case, variation = arguments["case"], arguments["variation"]
    if target.name not in MEGATRON or variation not in MEGATRON_FIELDS:
        return None
    other = varied(case, variation)
    written = Written(case)
    build(target.load("pipeline"), case, written, written.cache())
    loaded = build(target.load("pipeline"), other, written, written.cache())
    differing = None  # the first sample whose tokens (or labels) differ: indices made for the other config
    for number, (got, want) in enumerate(zip(loaded, oracle_splits(*other.reference_arguments()), strict=True)):
        for k in range(min(len(got), len(want)) if want is not None else 0):
            sample, reference = dict(got[k]), dict(want[k])
            key = next((key for key in ("tokens", "labels") if not torch.equal(sample[key], reference[key])), None)
            if differing is None and key is not None:
                differing = (number, k, key, reference[key])
    if differing is None:
        return None
    number, k, key, expected = differing
    name = MEGATRON_FIELDS[variation]
    prefixes = "[\n" + "".join(f"    {_documents(documents, '        ')},\n" for documents in case.prefixes) + "]"
    return _header(prop, target, command, ("megatron-core", "numpy", "torch"), _sentence(prop)) + "\n" + \
        MEGATRON_IMPORTS + _tokenizer(case.config) + PIPELINE_TEST.format(
            prefixes=prefixes, weights=None if case.weights is None else list(case.weights), split=case.split,
            sizes=list(case.sizes), first=_megatron_keywords(case.config), variation=name,
            changed=f"{name!r}: {getattr(other.config, variation)!r}", split_name=SPLIT_NAMES[number], index=k, key=key,
            expected=_tensor(expected), slug=slug(prop.name), split_number=number)


# --- loss and trainer properties: the harness's public API, the case pinned ----------------------


HARNESS_TEST = '''
import torch  # noqa: F401 - what the pinned case's repr names
from hypothesis import Phase, example, given, settings
from numpy import array, float32, float64, int64  # noqa: F401 - what the pinned case's repr names

from parity.cases import *  # noqa: F403 - the case types the pinned case's repr names
from parity.dataset_config import GPTDatasetConfig  # noqa: F401
from parity.table.rows import PROPERTIES
from parity.targets import get_target

PROPERTY = next(prop for prop in PROPERTIES if prop.name == {name!r})
TARGET = get_target({target!r})


@settings(phases=[Phase.explicit], database=None, deadline=None)
@given(**PROPERTY.strategies())
@example(**{arguments})
def test_{slug}(**arguments):
    PROPERTY.run(TARGET.load(PROPERTY.interface), arguments, "cpu", TARGET)
'''


def write_harness_reproducer(prop, target: Target, arguments: dict, command: str, build_as: Target | None = None) -> str:
    pinned = "{" + ", ".join(f"{name!r}: {value!r}" for name, value in arguments.items()) + "}"
    return _header(prop, target, command, ("parity-harness", "torch", "transformers"), _sentence(prop)) + \
        HARNESS_TEST.format(name=prop.name, target=(build_as or target).name, arguments=pinned, slug=slug(prop.name))


def slug(name: str) -> str:
    """``dataset/matches-oracle`` as a Python name's part: ``dataset__matches_oracle``."""
    return name.replace("/", "__").replace("-", "_")


def writer_for(prop):
    """The writer of ``prop``'s reproducer, or None where its failure is not one a file can show yet."""
    if prop.name in SAMPLE_PROPERTIES:
        return write_sample_reproducer
    if prop.name in PIPELINE_PROPERTIES:
        return write_pipeline_reproducer
    if prop.interface in HARNESS_PROPERTIES_OF:
        return write_harness_reproducer
    return None


