"""``python -m parity bench``: how fast the property suite finds each known bug, and what it costs.

Three measurements, from any directory; what is measured is read from the property table
(parity.table.rows):

1. Every known-bug target is hunted with the hunted properties that must catch it, once per seed,
   by a random (not derandomized) search from the bare strategies: the explicit examples are left
   out, so the figures say what the random search alone achieves. Medians over
   the seeds that found the bug: examples and seconds to the first counterexample, seconds with
   shrinking, and the size of the shrunk counterexample (characters of its ``repr``).
2. The dataset benchmark of :mod:`parity.dataset.bench` (serving: cached impl versus the oracle).
3. Examples per second of every property of the table on ``impl``, timed the way
   the ``dev`` profile runs them: freshly generated examples only, derandomized, no database.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable

from hypothesis import strategies as st

from parity.dataset.bench import bench_dataset
from parity.devices import DEVICES, TRAINER_DTYPES, check_dtype_runs_on, make_deterministic, resolve_device
from parity.report.text_table import text_table
from parity.safety.threads import freeze_heap
from parity.table.hunt import examples_per_second
from parity.table.rows import PROPERTIES, Property, catching
from parity.targets import builtin_targets, get_target

HUNT_EXAMPLES = 100
#: The ``dev`` profile's ``max_examples`` (parity.safety.profiles): what the default suite spends per property.
RATE_EXAMPLES = 25
#: A cap per property, so the slow model-sized properties cannot take the whole run.
RATE_SECONDS = 10.0
SIZE_NOTE = "size = len(repr(shrunk counterexample)), the drawn arguments as one tuple"

Progress = Callable[[str], None]


def run_bench(
    seeds: int = 5,
    progress: Progress | None = None,
    *,
    hunt_examples: int = HUNT_EXAMPLES,
    rate_examples: int = RATE_EXAMPLES,
    rate_seconds: float = RATE_SECONDS,
    shrink: bool = True,
    crash_hunt: bool = False,
    dtype: str | None = None,
    device: str = "cpu",
    only: list[str] | None = None,
) -> dict:
    """All three measurements as one JSON-ready dict, on ``device``; with ``only`` (known-bug target names), the
    hunts of those alone.

    With ``dtype``, only the properties with a dtype axis that has it are hunted and timed, every
    drawn case in that working dtype (``Property.strategies``); the dtype-free dataset benchmark is
    left out.

    With ``crash_hunt`` and megatron-core installed, ``dataset["megatron"]["crash"]`` also says how
    the random search finds and shrinks megatron-core's own index crash (docs/dataset.md, Crashes).

    Keys: ``settings`` (the arguments); ``hunts``, one entry per known-bug target and hunted
    property (``found`` of ``seeds``, the ``median_*`` figures, each seed's hunt report under
    ``runs``); ``dataset``, what :func:`parity.dataset.bench.bench_dataset` returns; ``rates``,
    property name -> ``examples``, ``seconds``, ``examples_per_second``; ``seconds``, the whole run.
    """
    progress = progress or (lambda message: None)
    start = time.perf_counter()
    # Built-ins, megatron-core too when installed; entry-point targets only when selected.
    targets = builtin_targets().values() if only is None else [get_target(name) for name in only]
    hunts = hunt_known_bugs(targets, seeds, hunt_examples, progress, shrink, dtype, device)
    dataset = None
    if dtype is None and only is None:
        progress("dataset benchmark (parity.dataset.bench)")
        dataset = bench_dataset()
    if crash_hunt and dataset and "megatron" in dataset:
        progress("hunt megatron-core's index crash")
        dataset["megatron"]["crash"] = megatron_crash_hunt()
    rates = {}
    impl = get_target("impl")
    for prop in PROPERTIES if only is None else ():
        if prop.applies_to(impl) and (dtype is None or dtype in prop.dtypes):
            progress(f"examples per second: {prop.name}")
            rates[prop.name] = examples_per_second(
                lambda subject, arguments, prop=prop: prop.run(subject, arguments, device, target=impl),
                impl.load(prop.interface),
                st.tuples(prop.strategy(dtype)),
                rate_examples,
                rate_seconds,
            )
    return {
        "settings": {
            "seeds": seeds,
            "hunt_examples": hunt_examples,
            "rate_examples": rate_examples,
            "rate_seconds": rate_seconds,
            "dtype": dtype,
            "device": device,
            "targets": None if only is None else list(only),
        },
        "hunts": hunts,
        "dataset": dataset,
        "rates": rates,
        "seconds": round(time.perf_counter() - start, 1),
    }


def megatron_crash_hunt(max_examples: int = 5000, seed: int = 0) -> dict:
    """Random search for a crash of ``megatron-core:fixed`` with the index property; shrunk."""
    (indices,) = [prop for prop in PROPERTIES if prop.name == "dataset/indices-match-reference"]
    fixed = get_target("megatron-core:fixed")
    found = indices.hunt(fixed.load("dataset"), max_examples=max_examples, seed=seed, explicit=False, target=fixed)
    return {
        "crash": found.crash or None,
        "examples_to_crash": found.examples_to_crash,
        "shrunk": found.crash_counterexample or None,
        "seconds_with_shrinking": round(found.seconds_total, 2),
    }


def hunt_known_bugs(
    targets, seeds: int, max_examples: int, progress: Progress, shrink: bool = True, dtype: str | None = None,
    device: str = "cpu",
) -> list[dict]:
    """Each known-bug target hunted with every hunted property of the table that must catch it (with
    ``dtype``: those whose cases draw it, in it)."""
    return [
        _hunt_over_seeds(target, prop, seeds, max_examples, progress, shrink, dtype, device)
        for target in targets
        if target.is_known_bug
        for prop in hunted_properties(target, dtype)
    ]


def hunted_properties(target, dtype: str | None = None) -> list[Property]:
    """The hunted properties that must catch ``target`` (with ``dtype``: those whose cases draw it)."""
    return [
        prop for prop in catching(target.name)
        if prop.hunted and prop.applies_to(target) and (dtype is None or dtype in prop.dtypes)
    ]


def _hunt_over_seeds(
    target, prop: Property, seeds: int, max_examples: int, progress: Progress, shrink: bool = True,
    dtype: str | None = None, device: str = "cpu",
) -> dict:
    """One hunt per seed; the medians are over the seeds that found the bug (a miss has no figures)."""
    subject = target.load(prop.interface)
    name = prop.name
    runs = []
    for seed in range(seeds):
        progress(f"hunt {target.name} with {name}, seed {seed}")
        found = prop.hunt(
            subject, max_examples=max_examples, seed=seed, shrink=shrink, explicit=False, target=target, dtype=dtype,
            device=device,
        )
        runs.append(found.as_report())
    found = [run for run in runs if run["examples_to_failure"] is not None]

    def median(key, measure=lambda value: value):
        return statistics.median(measure(run[key]) for run in found) if found else None

    return {
        "target": target.name,
        "property": name,
        "seeds": seeds,
        "found": len(found),
        "median_examples_to_failure": median("examples_to_failure"),
        "median_seconds_to_failure": median("seconds_to_failure"),
        "median_seconds_with_shrinking": median("seconds_total"),
        "median_counterexample_size": median("counterexample", len),
        "runs": runs,
    }


def format_bench(result: dict) -> str:
    """The result as plain-text tables."""
    config = result["settings"]
    where = f"on {config['device']}" + (f", every case in {config['dtype']}" if config["dtype"] else "")
    lines = [
        f"Finding the known bugs ({where}): {config['seeds']} random seeds per hunt, up to {config['hunt_examples']} "
        "examples each, bare strategies (no explicit @example); medians over the seeds that found the bug",
        text_table(
            ["target", "property", "found", "examples", "s to find", "s with shrinking", "size"],
            [
                [
                    h["target"],
                    h["property"],
                    f"{h['found']}/{h['seeds']}",
                    _num(h["median_examples_to_failure"]),
                    _num(h["median_seconds_to_failure"]),
                    _num(h["median_seconds_with_shrinking"]),
                    _num(h["median_counterexample_size"]),
                ]
                for h in result["hunts"]
            ],
        ),
        SIZE_NOTE,
        "",
    ]
    lines += _dataset_lines(result["dataset"])
    lines += _rate_lines(result["rates"], where, config)
    lines.append(f"bench took {result['seconds']} s")
    return "\n".join(lines)


def _rate_lines(rates: dict, where: str, config: dict) -> list[str]:
    """The default-suite properties' rates on impl (none under ``--target``: only the named bugs are hunted)."""
    if config.get("targets"):
        return ["Default-suite properties on impl: not timed under --target (only the named known bugs are hunted)", ""]
    return [
        f"Default-suite properties on impl ({where}): generated examples only, derandomized, up to "
        f"{config['rate_examples']} examples or {config['rate_seconds']} s each",
        text_table(
            ["property", "examples", "seconds", "examples/s"],
            [[name, r["examples"], _num(r["seconds"]), _num(r["examples_per_second"])] for name, r in rates.items()],
        ),
        "",
    ]


def _dataset_lines(dataset: dict | None) -> list[str]:
    """The dataset benchmark's tables (none under ``--dtype``: it has no dtype)."""
    if dataset is None:
        return ["Dataset benchmark: not run under --dtype (datasets have no working dtype) or --target", ""]
    serve, index = dataset["serve"], dataset["index_build"]
    return [
        f"Dataset serving, sequence length {serve['sequence_length']}, one torch thread (parity.dataset.bench)",
        text_table(
            ["what", "us per sample"],
            [
                ["impl, served from the cache", _num(serve["impl_cached_us_per_sample"])],
                ["impl, masks recomputed", _num(serve["impl_recomputing_masks_us_per_sample"])],
                ["oracle", _num(serve["oracle_us_per_sample"])],
            ],
        ),
        f"oracle / impl: {serve['oracle_over_impl']}x; recomputing / cached: {serve['recomputing_over_cached']}x; "
        f"index build for {index['tokens']} tokens in {index['documents']} documents: {index['seconds']} s",
        *_megatron_lines(dataset.get("megatron")),
        "",
    ]


def _megatron_lines(megatron: dict | None) -> list[str]:
    """impl beside megatron-core's own GPTDataset (parity.dataset.bench), when it was timed."""
    if megatron is None:
        return []
    index = megatron["index_build"]
    rows = [
        [f"index build, {index['tokens']} tokens / {index['documents']} documents",
         f"{index['impl_seconds'] * 1e6:.0f}", f"{index['megatron_seconds'] * 1e6:.0f}", f"{index['impl_over_megatron']}x"]
    ]
    for serve in megatron["serve"]:
        mask = "with" if serve["attention_mask"] else "without"
        rows.append([f"serve, L={serve['sequence_length']}, {mask} attention mask", _num(serve["impl_us_per_sample"]),
                     _num(serve["megatron_us_per_sample"]), f"{serve['impl_over_megatron']}x"])
    return [
        "",
        f"impl beside megatron-core {megatron['version']} (its C++ index helpers), one torch thread",
        text_table(["what", "impl us", "megatron-core us", "impl / megatron-core"], rows),
        "megatron-core hands its cached attention mask out by reference and writable (a hazard); impl shares it "
        "write-protected (docs/dataset.md, Shared masks)",
        *_crash_lines(megatron.get("crash")),
    ]


def _crash_lines(crash: dict | None) -> list[str]:
    if crash is None:
        return []
    if crash["crash"] is None:
        return ["", "megatron-core's index crash: not reached by the random search this time"]
    return [
        "",
        f"megatron-core's index crash, found by the random search after {crash['examples_to_crash']} examples "
        f"({crash['seconds_with_shrinking']} s with shrinking): {crash['crash']}",
        f"shrunk to: {crash['shrunk']}",
    ]


def _num(value) -> str:
    return "-" if value is None else f"{value:.3g}" if isinstance(value, float) else str(value)


def add_bench_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seeds", type=int, default=5, help="hunts per known bug and property (default: 5)")
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    parser.add_argument("--device", default="cpu", choices=[*DEVICES, "auto"], help="default: cpu")
    parser.add_argument(
        "--dtype", choices=TRAINER_DTYPES,
        help="hunt and time only the properties that draw this working dtype, every case in it (float16: on cuda)",
    )
    parser.add_argument(
        "--target", action="append", metavar="NAME", dest="only",
        help="hunt only this known bug (repeatable), e.g. known-bug:causal-local-mean; nothing else is timed",
    )


def bench_main(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """The ``bench`` command: 0 when every seed found every known bug, 1 otherwise."""
    if args.seeds < 1:
        parser.error("--seeds must be at least 1")
    try:
        device = resolve_device(args.device)
        if args.dtype:
            check_dtype_runs_on(args.dtype, device)
        for name in args.only or ():
            if not get_target(name).is_known_bug:
                parser.error(f"--target {name}: not a known bug (expected to pass); see `python -m parity targets`")
    except (ValueError, LookupError) as error:
        parser.error(str(error))
    make_deterministic(device)
    freeze_heap()  # the hunts run many trainers, each ending in a full gc.collect() (parity.safety.threads)
    result = run_bench(
        args.seeds, lambda message: print(f"[parity] {message} ...", file=sys.stderr, flush=True), crash_hunt=True,
        dtype=args.dtype, device=device, only=args.only,
    )
    print(format_bench(result))
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(result, handle, indent=2)
    return 0 if all(h["found"] == h["seeds"] for h in result["hunts"]) else 1
