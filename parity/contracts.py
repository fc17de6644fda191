"""A target held to its interfaces' Protocols (docs/report.md, Usage errors): where a target is selected, a wrong
object is one usage error naming the target, the interface and what it must be, not a crash inside the first
property that touches it. The CLI turns it into exit 2, the plugin into a pytest usage error.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from parity.safety.usage import UsageError
from parity.targets import Interface, Target

#: What each interface must be, in the words of its Protocol: checked where a target is selected,
#: so a wrong object is one usage error, not a crash inside the first property that touches it.
DATASET_MEMBERS = ("__len__", "__getitem__", "document_index", "shuffle_index")
LOSS_MEMBERS = ("prepare_window", "window_count", "microbatch_loss", "loss_is_scaled_for_ga")
LOOP_MEMBERS = ("prepare", "step")


class TargetContractError(UsageError, TypeError):
    """A target's interface is not what its Protocol says (a usage error: the target, not the
    harness and not the property, has to change)."""


def _listed(names) -> str:
    names = list(names)
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def checked_interface(target: Target, interface: Interface) -> Any:
    """The interface object, loaded and checked against its Protocol; ``TargetContractError`` in
    one line naming the target, the interface path and what it must be."""
    path = getattr(target, interface)
    try:
        value = target.load(interface)
    except LookupError:
        raise
    except Exception as error:  # an import error, a missing attribute, a malformed path
        raise TargetContractError(
            f"target {target.name!r}: its {interface} interface {path!r} cannot be loaded: {type(error).__name__}: {error}"
        ) from None
    where = f"target {target.name!r}: {interface}={path!r}"
    if interface == "dataset" and not callable(value):
        raise TargetContractError(f"{where}: a dataset target is a callable (documents, config) -> dataset, "
                                  f"got {type(value).__name__}")
    if interface == "loss" and (missing := [m for m in LOSS_MEMBERS if not hasattr(value, m)]):
        raise TargetContractError(f"{where}: a loss target has {_listed(LOSS_MEMBERS)} (parity.targets.DiffusionLoss), "
                                  f"got {type(value).__name__} without {_listed(missing)}")
    if interface == "trainer":
        from transformers import Trainer

        trainer_class = value if isinstance(value, type) else getattr(value, "trainer", value)  # a ShippedTrainer's
        if not (isinstance(trainer_class, type) and issubclass(trainer_class, Trainer)):
            got = trainer_class.__name__ if isinstance(trainer_class, type) else type(trainer_class).__name__
            raise TargetContractError(f"{where}: a trainer target is a transformers.Trainer subclass, or a "
                                      f"parity.training.shipped.ShippedTrainer naming one, got {got}")
    if interface == "loop" and (missing := [m for m in LOOP_MEMBERS if not callable(getattr(value, m, None))]):
        raise TargetContractError(f"{where}: a loop target has {_listed(LOOP_MEMBERS)} "
                                  f"(parity.training.causal.drivers.loop.CausalLoop), got {type(value).__name__} "
                                  f"without {_listed(missing)}")
    if interface == "causal_trainer" and not isinstance(getattr(value, "sft_config", None), Mapping):  # TRL's modes
        from transformers import Trainer

        if not (isinstance(value, type) and issubclass(value, Trainer)):
            got = value.__name__ if isinstance(value, type) else type(value).__name__
            raise TargetContractError(f"{where}: a causal_trainer target is a transformers.Trainer subclass, or TRL's "
                                      f"SFTTrainer in a parity.training.causal.drivers.trl_sft.SftMode, got {got}")
    return value


def checked_dataset(value: Any, target: str = "the target") -> Any:
    """What a dataset factory returned, if it is a dataset (``GPTDatasetLike``); else the one line
    saying what a dataset target must return."""
    missing = [m for m in DATASET_MEMBERS if not hasattr(value, m)]
    if missing:
        raise TargetContractError(
            f"{target}: a dataset target returns a dataset with {_listed(DATASET_MEMBERS)} (parity.targets.GPTDatasetLike), "
            f"got {type(value).__name__} without {_listed(missing)}"
        )
    return value


def preflight(target: Target, seed: int = 0) -> None:
    """A selected target held to its interfaces' Protocols before any work (docs/report.md, Usage errors):
    each interface loaded and checked (:func:`checked_interface`), and a dataset factory called once on
    upstream's case (``parity.dataset_config.upstream_documents``), what it returns checked
    (:func:`checked_dataset`). ``TargetContractError`` in one line naming the target, the interface and
    what it must be; the CLI turns it into exit 2, the plugin into a pytest usage error. A factory that
    raises here is left to the properties, which report it as a crash."""
    from parity.dataset_config import upstream_config, upstream_documents
    from parity.safety.crash import TargetCrashed, call_target

    for interface in ("dataset", "loss", "trainer", "causal_trainer", "loop"):
        if not target.provides(interface):
            continue
        loaded = checked_interface(target, interface)
        if interface == "dataset":
            try:
                built = call_target("building the dataset", loaded, upstream_documents(seed), upstream_config())
            except TargetCrashed:
                continue
            checked_dataset(built, f"target {target.name!r}: dataset={target.dataset!r}")
