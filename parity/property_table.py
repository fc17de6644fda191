"""The table of properties: one declarative record per property drives every use of it.

In the spirit of PyTorch's OpInfo: a :class:`Property` names its check function, the interface it
needs, the strategies of its arguments, its explicit examples (the upstream triggers), the devices
it runs on and the known bugs it must catch. The pytest suite (:mod:`parity.suite`), the "finds
this bug" checks, ``python -m parity bench`` and the report all read :data:`PROPERTIES`, so adding
a property is one entry (docs/design.md, Properties).

The check is a ``"module:attribute"`` path and the strategies and examples are built by functions,
all loaded when a property is used, so reading the table imports neither torch nor transformers.
A check is called as ``check(interface, **arguments)``, plus
``device=`` and ``target=`` when it takes them; it raises ``AssertionError`` on a counterexample and
may return notes (strings: hazards, precision findings) that accompany a passing verdict.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from hypothesis import strategies as st

from parity.devices import DEVICES, DTYPES, TRAINER_DTYPES
from parity.hunt import Hunt, hunt
from parity.suite.budget import WHOLE_RUN_SHRINK_RUNS, WINDOW_SHRINK_RUNS
from parity.targets import Interface, Target, load_attribute


@dataclass(frozen=True)
class Property:
    """One property of the suite."""

    #: ``area/what-it-says``, e.g. ``dataset/matches-oracle``; also the test's name.
    name: str
    interface: Interface
    #: ``check(interface, **arguments[, device=][, target=])``
    check: str
    #: Builds ``{argument: strategy}``.
    arguments: Callable[[], Mapping[str, st.SearchStrategy]]
    #: Builds the ``{argument: value}`` dicts run before any random example (``@example``).
    examples: Callable[[], Sequence[Mapping[str, Any]]] | None = None
    devices: tuple[str, ...] = ("cpu",)
    #: The working dtypes its cases draw (none: no dtype axis); ``bench --dtype`` holds them to one.
    dtypes: tuple[str, ...] = ()
    #: Known-bug targets this property must catch.
    catches: tuple[str, ...] = ()
    #: Fraction of the profile's ``max_examples``; below 1 marks a whole-run property, which also
    #: reports unshrunk outside the nightly profile (parity.suite.budget).
    examples_fraction: float = 1.0
    #: Runs a failing search may spend after its first failure (parity.suite.budget.ShrinkBudget): set
    #: where an example is a training run; None leaves shrinking to Hypothesis's own limits.
    shrink_runs: int | None = None
    #: Whether ``bench`` hunts the known bugs with it from the bare strategies.
    hunted: bool = False
    slow: bool = False
    #: A ``Target`` attribute that must be true for the property to apply (e.g. ``promises_copies``).
    only_if: str | None = None
    #: The kind of difference a plain ``AssertionError`` of the check is (docs/design.md, Verdict kinds).
    kind: str = "mismatch"

    @property
    def whole_run(self) -> bool:
        """Each example is a whole training run (a fraction of the profile's examples, unshrunk)."""
        return self.examples_fraction < 1

    @property
    def test_name(self) -> str:
        return "test_" + self.name.replace("/", "__").replace("-", "_")

    def check_function(self) -> Callable[..., None]:
        return load_attribute(self.check)

    def strategies(self, dtype: str | None = None) -> dict[str, st.SearchStrategy]:
        """The arguments' strategies; with ``dtype``, every drawn case in that working dtype
        (``parity.cases.at_dtype``), which must be one of the property's ``dtypes``."""
        from parity.cases import at_dtype

        strategies = dict(self.arguments())
        if dtype is None:
            return strategies
        if dtype not in self.dtypes:
            raise ValueError(f"{self.name} draws {', '.join(self.dtypes) or 'no dtype'}; got {dtype!r}")
        return {name: strategy.map(functools.partial(at_dtype, dtype=dtype)) for name, strategy in strategies.items()}

    def at_dtype(self, arguments: Mapping[str, Any], dtype: str | None) -> dict[str, Any]:
        """Explicit arguments as ``strategies(dtype)`` would draw them."""
        from parity.cases import at_dtype

        return {name: value if dtype is None else at_dtype(value, dtype) for name, value in arguments.items()}

    def strategy(self, dtype: str | None = None) -> st.SearchStrategy[dict[str, Any]]:
        return st.fixed_dictionaries(self.strategies(dtype))

    def explicit_examples(self) -> list[dict[str, Any]]:
        return [] if self.examples is None else [dict(example) for example in self.examples()]

    def run(
        self, subject: Any, arguments: Mapping[str, Any], device: str = "cpu", target: Target | None = None
    ) -> list[str]:
        """One example: ``check(subject, **arguments)``. Returns the check's notes (none when it
        returns nothing); a counterexample raises :class:`~parity.compare.ParityFailure`, whose
        verdict names the kind (a plain ``AssertionError`` of the check is this record's ``kind``)."""
        from parity.compare import Finding, ParityFailure, judge

        check = self.check_function()
        accepted = inspect.signature(check).parameters
        extra = {key: value for key, value in (("device", device), ("target", target)) if key in accepted}
        try:
            return list(check(subject, **arguments, **extra) or ())
        except ParityFailure:
            raise
        except AssertionError as failure:
            raise ParityFailure(judge([], [Finding(self.kind, str(failure))])) from failure

    def applies_to(self, target: Target) -> bool:
        return target.provides(self.interface) and (self.only_if is None or bool(getattr(target, self.only_if)))

    def why_not(self, target: Target) -> str:
        """Why the property does not apply to ``target`` (the skip reason)."""
        if not target.provides(self.interface):
            return f"target {target.name!r} has no {self.interface} interface"
        return f"target {target.name!r} is not {self.only_if}: {self.name} does not apply"

    def hunt(
        self,
        subject: Any,
        *,
        max_examples: int,
        seed: int | None = None,
        shrink: bool = True,
        explicit: bool = True,
        device: str = "cpu",
        target: Target | None = None,
        dtype: str | None = None,
    ) -> Hunt:
        """Search for a counterexample on ``subject``: the explicit examples first (unless
        ``explicit=False``, to measure the random search alone), then drawn ones. A whole-run
        property is never shrunk here, as in the default suite (parity.suite.budget): shrinking a
        training run costs minutes, and its failure message already names the kind of difference.
        ``dtype``: every drawn case in that working dtype (``strategies``)."""
        examples = [(self.at_dtype(arguments, dtype),) for arguments in self.explicit_examples()] if explicit else []
        return hunt(
            lambda target_subject, arguments: self.run(target_subject, arguments, device, target),
            subject,
            st.tuples(self.strategy(dtype)),
            max_examples=max_examples,
            seed=seed,
            shrink=shrink and not self.whole_run,
            examples=examples,
            shrink_runs=self.shrink_runs,
        )


def properties_for(target: Target) -> list[Property]:
    return [prop for prop in PROPERTIES if prop.applies_to(target)]


def catching(target_name: str) -> list[Property]:
    """The properties that must catch the known-bug target ``target_name``."""
    return [prop for prop in PROPERTIES if target_name in prop.catches]


# --- the table --------------------------------------------------------------------------------------
# Strategies and examples are imported inside the builders, when a property is used.

CACHE_BUGS = ("known-bug:cache-alias", "known-bug:cache-accumulate", "megatron-core")


def _dataset():
    from parity.strategies import dataset

    return dataset


def _corners() -> list[dict]:
    """The dataset corners, each an explicit example (parity.strategies.dataset.corner_cases)."""
    return [{"case": case} for case in _dataset().corner_cases()]


def _pipeline():
    from parity.strategies import pipeline

    return pipeline


def _diffusion():
    from parity.strategies import diffusion

    return diffusion


def _training():
    from parity.strategies import training

    return training


PROPERTIES: tuple[Property, ...] = (
    Property(
        name="dataset/matches-oracle",
        interface="dataset",
        check="parity.properties.dataset:check_matches_oracle",
        arguments=lambda: {"case": _dataset().dataset_cases()},
        examples=lambda: [{"case": _dataset().UPSTREAM_PR_CASE}, {"case": _dataset().MOCK_DATA_CASE}, *_corners()],
        catches=CACHE_BUGS,
        hunted=True,
    ),
    Property(
        name="dataset/resume-agrees",
        interface="dataset",
        check="parity.properties.dataset:check_resume_agrees",
        arguments=lambda: {"resumed": _dataset().resumed_cases()},
        examples=lambda: [
            {"resumed": (_dataset().MOCK_DATA_CASE, 1)},
            *({"resumed": (case, case.length - 1)} for case in _dataset().corner_cases()),
        ],
        catches=CACHE_BUGS,
        hunted=True,
    ),
    Property(
        name="dataset/edits-do-not-leak",
        interface="dataset",
        check="parity.properties.dataset:check_edits_do_not_leak",
        arguments=lambda: {"case": _dataset().dataset_cases(), "edit": st.sampled_from(_dataset().EDITS)},
        examples=lambda: [
            {"case": _dataset().MOCK_DATA_CASE, "edit": "add_one"},
            *({**corner, "edit": _dataset().EDITS[n % 2]} for n, corner in enumerate(_corners())),
        ],
        only_if="promises_copies",
    ),
    Property(
        name="dataset/aliasing-hazards",
        interface="dataset",
        check="parity.properties.dataset:check_aliasing_hazards",
        arguments=lambda: {"case": _dataset().dataset_cases()},
        examples=lambda: [{"case": _dataset().MOCK_DATA_CASE}, *_corners()],
        kind="hazard",
    ),
    Property(
        name="dataset/dataloader-matches-oracle",
        interface="dataset",
        check="parity.properties.dataset:check_dataloader_matches_oracle",
        arguments=lambda: {"case": _dataset().small_dataset_cases, "batch_size": st.integers(1, 4)},
        # each of the two workers fills its own cache
        examples=lambda: [{"case": replace(_dataset().MOCK_DATA_CASE, serve_order=()), "batch_size": 2}],
        catches=CACHE_BUGS,
        slow=True,
    ),
    Property(
        name="dataset/indices-match-reference",
        interface="dataset",
        check="parity.properties.dataset:check_indices_match_oracle",
        arguments=lambda: {"case": _dataset().dataset_cases()},
        examples=lambda: [{"case": _dataset().UPSTREAM_PR_CASE}, *_corners()],
    ),
    # --- megatron's files, its builder, blends, splits, index cache, and mock data (docs/dataset.md) ---
    Property(
        name="dataset/files-match-oracle",
        interface="dataset",
        check="parity.properties.dataset:check_matches_oracle",
        arguments=lambda: {"case": _dataset().dataset_cases().map(_dataset().on_disk)},
        examples=lambda: [{"case": _dataset().on_disk(case)} for case in _dataset().file_cases()],
        catches=("megatron-core",),
        only_if="reads_files",
    ),
    Property(
        name="dataset/files-indices-match-reference",
        interface="dataset",
        check="parity.properties.dataset:check_indices_match_oracle",
        arguments=lambda: {"case": _dataset().dataset_cases().map(_dataset().on_disk)},
        examples=lambda: [{"case": _dataset().on_disk(case)} for case in _dataset().file_cases()],
        only_if="reads_files",
    ),
    Property(
        name="pipeline/splits-match-reference",
        interface="pipeline",
        check="parity.properties.pipeline:check_splits_match_reference",
        arguments=lambda: {"case": _pipeline().pipeline_cases()},
        examples=lambda: [{"case": case} for case in _pipeline().PIPELINE_CASES],
    ),
    Property(
        name="pipeline/blend-matches-reference",
        interface="pipeline",
        check="parity.properties.pipeline:check_blend_matches_reference",
        arguments=lambda: {"case": _pipeline().pipeline_cases()},
        examples=lambda: [{"case": case} for case in _pipeline().PIPELINE_CASES],
    ),
    Property(
        name="pipeline/samples-match-oracle",
        interface="pipeline",
        check="parity.properties.pipeline:check_pipeline_matches_oracle",
        arguments=lambda: {"case": _pipeline().pipeline_cases()},
        examples=lambda: [{"case": case} for case in _pipeline().PIPELINE_CASES],
        catches=("megatron-core",),
    ),
    Property(
        name="pipeline/cache-reloads",
        interface="pipeline",
        check="parity.properties.pipeline:check_cache_reloads",
        arguments=lambda: {"case": _pipeline().pipeline_cases()},
        examples=lambda: [{"case": _pipeline().PIPELINE_CASES[0]}],
        catches=("megatron-core",),
    ),
    Property(
        name="pipeline/cache-key-separates-configs",
        interface="pipeline",
        check="parity.properties.pipeline:check_cache_key_separates_configs",
        arguments=lambda: {"case": _pipeline().pipeline_cases(), "variation": st.sampled_from(_pipeline().VARIATIONS)},
        examples=lambda: [
            {"case": _pipeline().PIPELINE_CASES[0], "variation": variation} for variation in _pipeline().VARIATIONS
        ],
        catches=("megatron-core",),
    ),
    Property(
        name="pipeline/fast-cache-load-over-stale-files",
        interface="pipeline",
        check="parity.properties.pipeline:check_fast_cache_load_over_stale_files",
        arguments=lambda: {"case": _pipeline().pipeline_cases()},
        examples=lambda: [{"case": _pipeline().PIPELINE_CASES[0]}],
        kind="hazard",
    ),
    Property(
        name="mock/matches-oracle",
        interface="mock",
        check="parity.properties.dataset:check_matches_oracle",
        arguments=lambda: {"case": _dataset().mock_cases()},
        examples=lambda: [{"case": _dataset().MEGATRON_MOCK_CASE}],
        catches=("megatron-core:mock",),
        hunted=True,
    ),
    Property(
        name="mock/resume-agrees",
        interface="mock",
        check="parity.properties.dataset:check_resume_agrees",
        arguments=lambda: {"resumed": _dataset().mock_cases().map(lambda case: (case, case.length - 1))},
        examples=lambda: [{"resumed": (_dataset().MEGATRON_MOCK_CASE, 1)}],
        catches=("megatron-core:mock",),
    ),
    Property(
        name="mock/indices-match-reference",
        interface="mock",
        check="parity.properties.dataset:check_indices_match_oracle",
        arguments=lambda: {"case": _dataset().mock_cases()},
        examples=lambda: [{"case": _dataset().MEGATRON_MOCK_CASE}],
    ),
    Property(
        name="diffusion/window-parity",
        interface="loss",
        check="parity.properties.diffusion:check_window_parity",
        arguments=lambda: {"case": _diffusion().window_cases()},
        # bfloat16 first: a known bug is caught (and the hunt stops) in production's precision.
        examples=lambda: [
            {"case": _diffusion().SEED_SCENARIO_BF16},
            {"case": _diffusion().SEED_SCENARIO},
            *({"case": case} for case in _diffusion().corner_cases()),
        ],
        shrink_runs=WINDOW_SHRINK_RUNS,
        devices=DEVICES,
        catches=("known-bug:local-mean",),
        hunted=True,
        dtypes=DTYPES,
    ),
    Property(
        name="diffusion/regrouping",
        interface="loss",
        check="parity.properties.diffusion:check_regrouping",
        arguments=lambda: {"case": _diffusion().window_cases(), "rows_per_microbatch": st.integers(1, 4)},
        # The corners where re-cutting can matter: unequal counts in a window of several microbatches; and
        # a correct re-cut whose trajectory drifts over seven steps (docs/budget.md, the trajectory reference).
        examples=lambda: [
            *({"case": case, "rows_per_microbatch": 1 + n % 4}
              for n, case in enumerate(_diffusion().corners_where(a_window_of_unequal_counts=True))),
            {"case": _diffusion().DRIFTING_RUN, "rows_per_microbatch": 1},
        ],
        shrink_runs=WINDOW_SHRINK_RUNS,
        devices=DEVICES,
        dtypes=DTYPES,
    ),
    Property(
        # One microbatch per window: local and global means coincide, so every target passes.
        name="diffusion/single-microbatch-control",
        interface="loss",
        check="parity.properties.diffusion:check_window_parity",
        arguments=lambda: {"case": _diffusion().window_cases(window_size=1)},
        examples=lambda: [{"case": case} for case in _diffusion().corners_where(microbatches_a_window="one")],
        shrink_runs=WINDOW_SHRINK_RUNS,
        devices=DEVICES,
        dtypes=DTYPES,
    ),
    Property(
        name="diffusion/empty-window-is-zero",
        interface="loss",
        check="parity.properties.diffusion:check_empty_window_is_a_finite_zero",
        arguments=lambda: {"case": _diffusion().window_cases(empty_first_window=True)},
        examples=lambda: [{"case": case} for case in _diffusion().corners_where(a_window_masks_nothing=True)],
        shrink_runs=WINDOW_SHRINK_RUNS,
        devices=DEVICES,
        dtypes=DTYPES,
    ),
    Property(
        name="noise/draws-match-oracle",
        interface="loss",
        check="parity.properties.diffusion:check_draws_match_the_oracle",
        arguments=lambda: {"case": _diffusion().window_cases(), "eos": st.sampled_from([_diffusion().EOS, None])},
        examples=lambda: [
            {"case": case, "eos": (_diffusion().EOS, None)[n % 2]} for n, case in enumerate(_diffusion().corner_cases())
        ],
        kind="noise",
        dtypes=DTYPES,
    ),
    Property(
        name="noise/masked-fraction-follows-p",
        interface="loss",
        check="parity.properties.diffusion:check_masked_fraction_follows_p",
        arguments=lambda: {
            "seed": st.integers(0, 2**32 - 1),
            "eps": st.sampled_from([1e-3, 0.25]) | st.floats(1e-3, 1.0),
        },
        kind="noise",
    ),
    Property(
        # Trainer.train(), evaluate() and prediction_step end to end, observed from outside.
        name="training/any-run-matches",
        interface="trainer",
        check="parity.properties.training:check_training_run",
        arguments=lambda: {"case": _training().trainer_cases()},
        # bfloat16 under autocast first: a known bug is caught (and the hunt stops) in production's precision;
        # float16 under loss scaling where the device has it (the CPU rejects it).
        examples=lambda: [
            {"case": _training().UPSTREAM_RUN_BF16},
            {"case": _training().UPSTREAM_RUN_FP16},
            {"case": _training().UPSTREAM_RUN},
            {"case": _training().RANK_LOCAL_RUN},
        ],
        devices=DEVICES,
        catches=("known-bug:local-mean", "known-bug:logits-local-mean"),
        hunted=True,
        shrink_runs=WHOLE_RUN_SHRINK_RUNS,
        examples_fraction=0.3,
        dtypes=TRAINER_DTYPES,
    ),
)
