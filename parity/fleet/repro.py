"""A finding as an upstream bug report: a reproducer that needs only the target's own package
(docs/dataset.md, Reproducers; ``python -m parity repro``).

A maintainer upstream will not install a property harness to read a report. So for each property a
target fails, the property is hunted until Hypothesis has shrunk its counterexample, and the shrunk case
is written out as one short pytest file:

* a dataset property (``dataset/matches-oracle``, ``dataset/resume-agrees``) or the pipeline's
  ``pipeline/cache-key-separates-configs`` on megatron-core, impl or a target of yours: the documents as
  short arrays, the config as keyword arguments, the calls in the order that fails, the reference's
  values inlined (only the key and sample that differ first) and one assertion saying what differs.
  It imports the target's own package (megatron-core, impl, your module), numpy and torch, never parity;
* a loss or trainer property: the failing case pinned with ``@example`` and the target named, through
  the harness's public API (the reference there is a model run, not a few values).

Each file is checked before it is kept: it must fail on the target, and, for a built-in known bug, pass
on its fixed companion (``impl`` for impl's known bugs, the upstream fix for megatron-core's, patched in
by a ``conftest.py`` beside the file for that run only).
"""

from __future__ import annotations

import dataclasses
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import textwrap
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import numpy as np
import torch

from parity.targets import Target, get_target

#: The dataset properties whose failure is one sample that differs from the reference.
SAMPLE_PROPERTIES = ("dataset/matches-oracle", "dataset/resume-agrees")
PIPELINE_PROPERTIES = ("pipeline/cache-key-separates-configs",)
#: Properties whose reproducer uses the harness's public API (their reference is a model run).
HARNESS_PROPERTIES_OF = ("loss", "trainer")
#: The megatron-core targets (their standalone code constructs megatron's classes itself).
MEGATRON = ("megatron-core", "megatron-core:fixed")


@dataclass
class Reproducer:
    """One written file and what checking it found."""

    property: str
    path: Path
    standalone: bool
    fails_on_target: bool
    passes_on_fixed: bool | None  # None: no fixed companion to hold it to
    message: str

    @property
    def kept(self) -> bool:
        return self.fails_on_target and self.passes_on_fixed is not False


# --- literals -----------------------------------------------------------------------------------


def _array(values) -> str:
    return f"np.array({np.asarray(values).tolist()!r}, dtype=np.int64)"


def _tensor(tensor: torch.Tensor) -> str:
    return f"torch.tensor({tensor.tolist()!r}, dtype={tensor.dtype})"


def _documents(documents, indent: str = "    ") -> str:
    return "[\n" + "".join(f"{indent}{_array(document)},\n" for document in documents) + indent[:-4] + "]"


def _versions(*packages: str) -> str:
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

        Failed on {_versions(*packages)}.
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
        build=build, slug=_slug(prop.name)))


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
            expected=_tensor(expected), slug=_slug(prop.name), split_number=number)


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
        HARNESS_TEST.format(name=prop.name, target=(build_as or target).name, arguments=pinned, slug=_slug(prop.name))


# --- the command ----------------------------------------------------------------------------------


def _slug(name: str) -> str:
    return name.replace("/", "__").replace("-", "_")


def writer_for(prop):
    if prop.name in SAMPLE_PROPERTIES:
        return write_sample_reproducer
    if prop.name in PIPELINE_PROPERTIES:
        return write_pipeline_reproducer
    if prop.interface in HARNESS_PROPERTIES_OF:
        return write_harness_reproducer
    return None


def hunted_subject(target: Target, prop):
    """What the hunt runs on: the target's interface, except where a known finding would hide another. megatron-core's
    pipeline serves its loss-mask cache bug in every build, so its cache-key finding is hunted on megatron's own
    GPTDataset with only the loss-mask fix (copy-on-FILL) applied; the file written still runs megatron as installed."""
    if target.name == "megatron-core" and prop.interface == "pipeline":
        import functools

        from parity.dataset.megatron import copy_on_fill, import_megatron
        from parity.dataset.megatron_pipeline import build_splits

        return functools.partial(build_splits, copy_on_fill(import_megatron().GPTDataset))
    return target.load(prop.interface)


def fixed_companion(target: Target) -> Target | None:
    """What a built-in known bug's reproducer must pass on: impl for impl's, the upstream fix for megatron-core."""
    if target.name == "megatron-core":
        return get_target("megatron-core:fixed")
    if target.is_known_bug and target.name.startswith("known-bug:"):
        return get_target("impl")
    return None


#: Beside a megatron-core reproducer, for the check on the fix only: the installed GPTDataset replaced by
#: the one the upstream fix makes (copy-on-FILL and the full cache key).
FIXED_MEGATRON_CONFTEST = '''
import megatron.core.datasets.gpt_dataset as gpt_dataset
from parity.dataset.megatron import fixed_class

gpt_dataset.GPTDataset = fixed_class()
'''


def run_file(path: Path, conftest: str | None = None, python: str = sys.executable) -> subprocess.CompletedProcess:
    """``pytest FILE`` in a folder of its own (with ``conftest`` beside it), as a maintainer runs it."""
    with tempfile.TemporaryDirectory(prefix="parity-repro-") as folder:
        copy = Path(folder) / path.name
        copy.write_text(path.read_text())
        if conftest:
            (Path(folder) / "conftest.py").write_text(conftest)
        return subprocess.run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:parity", copy.name],
                              cwd=folder, capture_output=True, text=True, timeout=600)


def _failure_line(result: subprocess.CompletedProcess) -> str:
    """What the file's failing assertion said (pytest's ``E`` lines, the first two), or pytest's last line."""
    lines = [line[4:].strip() for line in result.stdout.splitlines() if line.startswith("E   ")]
    last = result.stdout.strip().splitlines()[-1:] or [""]
    return " ".join(lines[:2]) or last[0]


def write_reproducers(target: Target, out: Path, properties: list[str] | None = None, max_examples: int = 200,
                      say=print, kept: dict[str, dict] | None = None) -> list[Reproducer]:
    """Hunt each applicable property on ``target``; for each that fails, write, check and keep a reproducer.
    ``kept``: property -> failing arguments a pytest run kept (:func:`remembered_failures`), written up
    without hunting; the properties it does not name are left alone."""
    from parity.table.rows import PROPERTIES

    out.mkdir(parents=True, exist_ok=True)
    written = []
    for prop in PROPERTIES:
        if properties and prop.name not in properties:
            continue
        writer = writer_for(prop)
        if writer is None or not prop.applies_to(target) or "cuda" == prop.devices[0]:
            continue
        if kept is not None:
            if prop.name not in kept:
                continue
            failing = kept[prop.name]
            say(f"{prop.name}: the last pytest run's failing example")
        else:
            say(f"{prop.name}: hunting")
            found = prop.hunt(hunted_subject(target, prop), max_examples=max_examples, target=target)
            if not found.found:
                say(f"{prop.name}: holds, nothing to write" if not found.crash else f"{prop.name}: crashed ({found.crash})")
                continue
            failing = found.failing_args[0]
        command = shlex.join(["python", "-m", "parity", "repro", "--target", target.name, "--property", prop.name,
                              "--out", str(out)])
        text = writer(prop, target, failing, command)
        if text is None:
            say(f"{prop.name}: fails, but not as one sample a file can show; run the suite for its report")
            continue
        path = out / f"test_{_slug(target.name.replace(':', '_'))}__{_slug(prop.name)}.py"
        path.write_text(text)
        result = run_file(path)
        companion = fixed_companion(target)
        passes = None
        if companion is not None:  # the same file building the fix (megatron's: patched in beside it, for this run)
            fixed_text = text if target.name in MEGATRON else writer(prop, target, failing, command, companion)
            with tempfile.TemporaryDirectory(prefix="parity-repro-fixed-") as folder:
                fixed_path = Path(folder) / path.name
                fixed_path.write_text(fixed_text)
                passes = run_file(fixed_path, FIXED_MEGATRON_CONFTEST if target.name in MEGATRON else None).returncode == 0
        reproducer = Reproducer(prop.name, path, writer is not write_harness_reproducer, result.returncode == 1, passes,
                                _failure_line(result))
        if not reproducer.kept:
            path.unlink()
            say(f"{prop.name}: the written file did not reproduce (fails on the target: {reproducer.fails_on_target}, "
                f"passes on the fix: {passes}); not kept")
        else:
            say(f"{prop.name}: wrote {path} ({len(text.splitlines())} lines): {reproducer.message}")
        written.append(reproducer)
    return written


# --- after a failing pytest run: the failing examples it kept ----------------------------------------


#: Where a pytest run keeps each property's last failing arguments, inside its cache folder (``.pytest_cache``).
FAILURES = "parity-failures"


def _failure_file(folder: Path, target: str, prop: str) -> Path:
    return folder / _slug(target.replace(":", "_")) / f"{_slug(prop)}.pickle"


def remember_failure(config, target: Target, prop, arguments: dict) -> None:
    """Keep ``arguments`` (a failing example of ``prop`` on ``target``) in the run's cache folder; Hypothesis replays
    the shrunk example last, so that is what stays. Nothing is kept where the cache plugin is off."""
    import pickle

    cache = getattr(config, "cache", None)
    if cache is None:
        return
    path = _failure_file(Path(cache.mkdir(FAILURES)), target.name, prop.name)
    try:
        data = pickle.dumps(arguments)
    except Exception:  # noqa: BLE001 - an example that does not pickle is not kept; the run's report stands
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(f".{os.getpid()}.tmp")
    temporary.write_bytes(data)
    temporary.replace(path)


def remembered_failures(cache_dir: Path, target: Target) -> dict[str, dict]:
    """property -> the last failing arguments a pytest run kept for ``target`` under ``cache_dir``."""
    import pickle

    folder = cache_dir / "d" / FAILURES / _slug(target.name.replace(":", "_"))
    from parity.table.rows import PROPERTIES

    names = {f"{_slug(prop.name)}.pickle": prop.name for prop in PROPERTIES}
    return {names[path.name]: pickle.loads(path.read_bytes()) for path in sorted(folder.glob("*.pickle")) if path.name in names}


def add_repro_arguments(parser) -> None:
    parser.add_argument("--target", required=True, metavar="NAME", help="the target whose failures to write up")
    parser.add_argument("--property", action="append", default=[], metavar="NAME",
                        help="repeatable: only these properties (default: every one that has a writer)")
    parser.add_argument("--out", required=True, metavar="DIR", help="the folder the reproducers are written into")
    parser.add_argument("--examples", type=int, default=200, metavar="N",
                        help="examples each property's hunt may draw (default: 200)")
    parser.add_argument("--from-last-run", nargs="?", const=".pytest_cache", metavar="CACHE_DIR",
                        help="write up the failing examples a pytest run kept (in its cache folder, default .pytest_cache) "
                        "instead of hunting again")


def repro_main(parser, args, say) -> int:
    """Exit 0 when at least one reproducer was written and kept, 1 when none was (nothing failed, or no file
    reproduced), 2 for a usage error (before any work)."""
    from parity.safety.usage import check_at_least
    from parity.table.rows import PROPERTIES
    from parity.targets import TargetLoadError, UnknownTargetError

    try:
        target = get_target(args.target)
        check_at_least("--examples", args.examples, 1)
        known = {prop.name for prop in PROPERTIES if writer_for(prop) is not None}
        for name in args.property:
            if name not in known:
                raise ValueError(f"--property {name!r}: a reproducer is written for {', '.join(sorted(known))}")
        out = Path(args.out)
        if out.exists() and not out.is_dir():
            raise ValueError(f"--out {args.out!r} is a file, not a folder")
    except (ValueError, UnknownTargetError, TargetLoadError) as error:
        parser.error(str(error))
    last_run = None
    if args.from_last_run is not None:
        last_run = remembered_failures(Path(args.from_last_run), target)
        if not last_run:
            print(f"{parser.prog}: no failing example of {target.name} kept under {args.from_last_run} (run pytest "
                  f"--parity-target {target.name} first, with the cache plugin on)")
            return 1
    kept = [r for r in write_reproducers(target, out, args.property or None, args.examples, say, last_run) if r.kept]
    for reproducer in kept:
        print(f"{reproducer.path}  ({'standalone' if reproducer.standalone else 'the harness public API'}): "
              f"{reproducer.message[:200]}")
    if not kept:
        print(f"{parser.prog}: no reproducer written for {target.name}: no property it has a writer for fails")
    return 0 if kept else 1
