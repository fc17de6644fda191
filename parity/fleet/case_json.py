"""A property's arguments as JSON data, read back only as the harness's own case types (docs/security.md, Kept failures).

A failing example the suite keeps is read back by ``python -m parity repro --from-last-run`` from a cache folder
that may come from anyone (a CI artifact, a contributor's upload). So it is stored as plain data, never as a
pickle, and reading it constructs nothing but what this module names: JSON's own values, tuples, and the case
types of :data:`CASE_TYPES`, each built field by field through its constructor, so the case's own checks (its
declared space) run on every value read. A case is written as ``{"type": NAME, "fields": {...}}``; inside it, each
field is read as its declared type says (a document as int64 integers, a dtype by its name); any other shape is a
:class:`CaseDataError` naming where it is and what was expected.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing

import numpy as np
import torch

from parity.cases import CausalCase, DatasetCase, PipelineCase, TrainerCase, WindowCase
from parity.dataset_config import GPTDatasetConfig
from parity.devices import DTYPES, torch_dtype

#: The only types a kept example may name.
CASE_TYPES = {cls.__name__: cls for cls in (DatasetCase, PipelineCase, WindowCase, TrainerCase, CausalCase, GPTDatasetConfig)}


class CaseDataError(ValueError):
    """A value that is not one this harness writes: where it is, and what was expected."""


# --- writing ------------------------------------------------------------------------------------------


def encode(value):
    """``value`` as JSON data; a TypeError for anything the reader would refuse (such an example is not kept)."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise TypeError(f"{value!r} is not a finite number")
        return value
    if isinstance(value, np.generic) and isinstance(value.item(), (bool, int, float)):
        return encode(value.item())
    if isinstance(value, (tuple, list)):
        return [encode(item) for item in value]
    if isinstance(value, np.ndarray) and value.ndim == 1 and np.issubdtype(value.dtype, np.integer):
        return value.tolist()
    if isinstance(value, torch.dtype) and str(value).removeprefix("torch.") in DTYPES:
        return str(value).removeprefix("torch.")
    if dataclasses.is_dataclass(value) and CASE_TYPES.get(type(value).__name__) is type(value):
        return {"type": type(value).__name__,
                "fields": {f.name: encode(getattr(value, f.name)) for f in dataclasses.fields(value) if f.init}}
    raise TypeError(f"{type(value).__name__} is not a case type this harness keeps ({', '.join(CASE_TYPES)})")


# --- reading ------------------------------------------------------------------------------------------


def decode(data, where: str):
    """An argument from its JSON data, whose type the data says: JSON's values, a list as a tuple, a case."""
    if isinstance(data, dict):
        return _case(data, where)
    if isinstance(data, list):
        return tuple(decode(item, f"{where}[{number}]") for number, item in enumerate(data))
    return _scalar(data, where)


def _scalar(data, where: str):
    if isinstance(data, float) and not math.isfinite(data):
        raise CaseDataError(f"{where}: {data!r} is not a finite number")
    return data


def _case(data: dict, where: str):
    if set(data) != {"type", "fields"} or not isinstance(data["fields"], dict):
        raise CaseDataError(f"{where}: a case is written as {{\"type\": NAME, \"fields\": {{...}}}}, got the keys "
                            f"{', '.join(sorted(map(str, data)))}")
    cls = CASE_TYPES.get(data["type"]) if isinstance(data["type"], str) else None
    if cls is None:
        raise CaseDataError(f"{where}: {data['type']!r} is not a case type (one of {', '.join(CASE_TYPES)})")
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    for name in data["fields"]:
        if name not in fields:
            raise CaseDataError(f"{where}: {cls.__name__} has no field {name!r} (its fields: {', '.join(fields)})")
    missing = [name for name, f in fields.items() if name not in data["fields"]
               and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
    if missing:
        raise CaseDataError(f"{where}: {cls.__name__} needs {', '.join(missing)}")
    hints = typing.get_type_hints(cls)
    values = {name: _typed(value, hints[name], f"{where}.{name}") for name, value in data["fields"].items()}
    try:
        return cls(**values)
    except Exception as error:  # noqa: BLE001 - the case's own checks, or a size its tensors cannot take: outside its space
        raise CaseDataError(f"{where}: outside the space of {cls.__name__}: {error}") from None


def _typed(data, hint, where: str):
    """``data`` read as the declared type ``hint`` of a case's field."""
    origin, arguments = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        if data is None and type(None) in arguments:
            return None
        (hint,) = [argument for argument in arguments if argument is not type(None)]
        return _typed(data, hint, where)
    if origin is tuple:
        if not isinstance(data, list):
            raise CaseDataError(f"{where}: expected a list, got {_kind(data)}")
        if len(arguments) == 2 and arguments[1] is Ellipsis:
            return tuple(_typed(item, arguments[0], f"{where}[{number}]") for number, item in enumerate(data))
        if len(data) != len(arguments):
            raise CaseDataError(f"{where}: expected {len(arguments)} values, got {len(data)}")
        return tuple(_typed(item, kind, f"{where}[{number}]") for number, (item, kind) in enumerate(zip(data, arguments)))
    if hint is np.ndarray:
        if not isinstance(data, list) or not all(type(item) is int for item in data):
            raise CaseDataError(f"{where}: expected a list of integers (a document), got {_kind(data)}")
        try:
            return np.array(data, dtype=np.int64)
        except OverflowError:
            raise CaseDataError(f"{where}: a token id does not fit int64") from None
    if hint is torch.dtype:
        if data not in DTYPES:
            raise CaseDataError(f"{where}: expected a dtype of {', '.join(DTYPES)}, got {data!r}")
        return torch_dtype(data)
    if hint in CASE_TYPES.values():
        value = _case(data, where) if isinstance(data, dict) else None
        if type(value) is not hint:
            raise CaseDataError(f"{where}: expected a {hint.__name__}, got {_kind(data)}")
        return value
    if hint is float and type(data) in (int, float):
        return float(_scalar(data, where))
    if hint in (bool, int, str) and type(data) is hint:
        return data
    raise CaseDataError(f"{where}: expected {getattr(hint, '__name__', hint)}, got {_kind(data)}")


def _kind(data) -> str:
    if isinstance(data, dict):
        return f"a {data.get('type', 'JSON object')!s}"
    return {list: "a list", str: f"the string {data!r}"[:80], type(None): "null"}.get(type(data), repr(data)[:80])
