"""An adapter module installed as a distribution would be, seen through ``PYTHONPATH`` only: its file, and a
``.dist-info`` folder whose ``entry_points.txt`` registers its targets in the ``parity.targets`` group. What a
user's ``pip install`` of their adapter package gives, without building a wheel."""

from __future__ import annotations

from pathlib import Path


def install_adapter(folder: Path, module: str, source: str, targets: dict[str, str]) -> Path:
    """``module.py`` holding ``source`` in ``folder``, registering ``targets`` (name -> ``module:ATTRIBUTE``);
    ``folder`` is what to put on ``PYTHONPATH``."""
    (folder / f"{module}.py").write_text(source)
    info = folder / f"{module}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module.replace('_', '-')}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[parity.targets]\n" + "".join(f"{n} = {p}\n" for n, p in targets.items()))
    return folder


def install_package(folder: Path, package: str, modules: dict[str, str], targets: dict[str, str]) -> Path:
    """A package ``package`` of ``modules`` (file name -> source; ``__init__.py`` empty unless given) in ``folder``,
    registering ``targets`` as :func:`install_adapter` does; ``folder`` is what to put on ``PYTHONPATH``."""
    (folder / package).mkdir()
    for name, source in {"__init__.py": "", **modules}.items():
        (folder / package / name).write_text(source)
    info = folder / f"{package}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {package.replace('_', '-')}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[parity.targets]\n" + "".join(f"{n} = {p}\n" for n, p in targets.items()))
    return folder
