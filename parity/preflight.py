"""A selected target held to its interfaces' Protocols before any work (docs/report.md, Usage
errors): each interface loaded and checked (``parity.targets.checked_interface``), and a dataset
factory called once on the report's own documents, what it returns checked
(``parity.targets.checked_dataset``). The CLI turns a failure into exit 2, the plugin into a pytest
usage error; a factory that raises here is left to the properties, which report it as a crash."""

from __future__ import annotations

from parity.targets import Target, checked_dataset, checked_interface


def preflight(target: Target, seed: int = 0) -> None:
    """``TargetContractError`` in one line naming the target, the interface and what it must be."""
    from parity.crash import TargetCrashed, call_target
    from parity.report.dataset import dataset_config, dataset_documents

    for interface in ("dataset", "loss", "trainer"):
        if not target.provides(interface):
            continue
        loaded = checked_interface(target, interface)
        if interface == "dataset":
            try:
                built = call_target("building the dataset", loaded, dataset_documents(seed), dataset_config())
            except TargetCrashed:
                continue
            checked_dataset(built, f"target {target.name!r}: dataset={target.dataset!r}")
