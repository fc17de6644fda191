"""The failing examples a run keeps are data (parity.fleet.kept_failures, parity.fleet.case_json; docs/security.md):
every case type round-trips through JSON, and each hostile file planted in a cache folder (a pickle that would
write a marker, a link out of the folder, a 1 GiB file, a truncated JSON, another schema, an unknown field or
type, a value outside the case's space) is refused with one line naming it, runs nothing, and leaves the honest
files beside it readable."""

from __future__ import annotations

import json
import os
import pickle
import types
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from parity.fleet.case_json import CaseDataError, decode, encode
from parity.fleet.kept_failures import MAX_BYTES, SCHEMA, remember_failure, remembered_failures
from parity.strategies import dataset, diffusion, pipeline, training
from parity.table.rows import PROPERTIES
from parity.targets import get_target
from tests.hostile import marker_pickle

pytestmark = pytest.mark.usefixtures("harness_self_check")

TARGET = get_target("known-bug:cache-alias")
MATCHES = next(prop for prop in PROPERTIES if prop.name == "dataset/matches-oracle")
RESUME = next(prop for prop in PROPERTIES if prop.name == "dataset/resume-agrees")


def round_trip(value):
    return decode(json.loads(json.dumps(encode(value))), "case")


# --- the case types as data ------------------------------------------------------------------------------


@pytest.mark.parametrize("prop", PROPERTIES, ids=lambda prop: prop.name)
def test_every_explicit_example_of_every_property_round_trips(prop):
    for arguments in prop.explicit_examples():
        for name, value in arguments.items():
            assert repr(round_trip(value)) == repr(value), (prop.name, name)  # what the reproducer writers print


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)
@given(st.one_of(dataset.dataset_cases(), dataset.mock_cases(), pipeline.pipeline_cases(), diffusion.window_cases(),
                 training.trainer_cases(), st.tuples(dataset.dataset_cases(), st.integers(0, 9))))
def test_drawn_cases_round_trip(value):
    assert repr(round_trip(value)) == repr(value)


def test_what_is_not_a_case_type_is_not_kept():
    with pytest.raises(TypeError, match="is not a case type"):
        encode(types.SimpleNamespace(n=1))
    with pytest.raises(TypeError, match="finite"):
        encode(float("nan"))


# --- the suite keeps them as JSON -------------------------------------------------------------------------


def pytest_config(cache: Path):
    """What pytest's cache plugin hands the suite: ``cache.mkdir(NAME)`` is ``CACHE/d/NAME``."""

    def mkdir(name: str) -> Path:
        (cache / "d" / name).mkdir(parents=True, exist_ok=True)
        return cache / "d" / name

    return types.SimpleNamespace(cache=types.SimpleNamespace(mkdir=mkdir))


@pytest.fixture
def cache(tmp_path) -> Path:
    """A cache folder holding one honest kept example: dataset/matches-oracle on known-bug:cache-alias."""
    remember_failure(pytest_config(tmp_path / "cache"), TARGET, MATCHES, {"case": dataset.UPSTREAM_PR_CASE})
    return tmp_path / "cache"


def kept_folder(cache: Path) -> Path:
    return cache / "d" / "parity-failures" / "known_bug_cache_alias"


def test_a_failing_example_is_kept_as_versioned_json_and_read_back(cache):
    (path,) = kept_folder(cache).iterdir()
    data = json.loads(path.read_text())
    assert path.name == "dataset__matches_oracle.json" and data["schema"] == SCHEMA
    assert data["arguments"]["case"]["type"] == "DatasetCase" and data["property"] == MATCHES.name
    kept, refused = remembered_failures(cache, TARGET)
    assert refused == [] and repr(kept[MATCHES.name]) == repr({"case": dataset.UPSTREAM_PR_CASE})


# --- hostile files -----------------------------------------------------------------------------------------


def test_the_planted_pickle_would_run_its_code(tmp_path):
    pickle.loads(marker_pickle(tmp_path / "ran"))  # the payload is live: loading it is running it
    assert (tmp_path / "ran").exists()


def plant(folder: Path, name: str, kind: str, tmp_path: Path) -> str:
    """Write the hostile file ``kind`` as ``folder/name``; what the one line refusing it must say."""
    honest = json.loads((folder / "dataset__matches_oracle.json").read_text())
    honest["property"] = RESUME.name
    honest["arguments"] = {"resumed": [honest["arguments"]["case"], 1]}
    path = folder / name
    if kind == "pickle":
        path.write_bytes(marker_pickle(tmp_path / "marker"))
        return "a pickle (an older harness kept these): never loaded"
    if kind == "pickle named json":
        path.write_bytes(marker_pickle(tmp_path / "marker"))
        return "not UTF-8 text"
    if kind == "link out of the folder":
        (tmp_path / "elsewhere.json").write_text(json.dumps(honest))
        path.symlink_to(tmp_path / "elsewhere.json")
        return f"a link to {tmp_path / 'elsewhere.json'}, outside the cache folder"
    if kind == "1 GiB":
        with path.open("wb") as stream:
            stream.truncate(2**30)  # sparse: no disk written
        return f"{2**30} bytes, over the {MAX_BYTES // 2**20} MiB a kept example may have; not read"
    if kind == "a pipe":
        os.mkfifo(path)
        return "not a plain file"
    text = json.dumps(honest)
    if kind == "truncated":
        path.write_text(text[: len(text) // 2])
        return "does not parse as JSON (Unterminated string starting at"
    changes = {
        "another schema": (lambda data: data.update(schema="parity-failure/2"), "is of schema 'parity-failure/2'"),
        "unknown field": (lambda data: data["arguments"]["resumed"][0]["fields"].update(shell="rm -rf ~"),
                          "resumed[0]: DatasetCase has no field 'shell'"),
        "unknown type": (lambda data: data["arguments"]["resumed"][0].update(type="os.system"),
                         "resumed[0]: 'os.system' is not a case type"),
        "outside the space": (lambda data: data["arguments"]["resumed"][0]["fields"]["config"]["fields"].update(split="all"),
                              "resumed[0].config: outside the space of GPTDatasetConfig: split must be one of"),
        "a wrong type": (lambda data: data["arguments"]["resumed"][0]["fields"].update(documents=[[1, "2"]]),
                         "resumed[0].documents[0]: expected a list of integers"),
        "unknown argument": (lambda data: data["arguments"].update(shell=1), "arguments: resumed, shell; dataset/resume"),
        "not a number": (lambda data: None, "holds NaN"),
    }
    change, said = changes[kind]
    change(honest)
    path.write_text(json.dumps(honest).replace('"resumed": [', '"resumed": [NaN, ' if kind == "not a number" else '"resumed": ['))
    return said


HOSTILE = ["pickle", "pickle named json", "link out of the folder", "1 GiB", "a pipe", "truncated", "another schema",
           "unknown field", "unknown type", "outside the space", "a wrong type", "unknown argument", "not a number"]


@pytest.mark.parametrize("kind", HOSTILE)
def test_a_hostile_file_is_refused_in_one_line_and_the_honest_one_is_read(cache, tmp_path, kind):
    folder = kept_folder(cache)
    name = "dataset__resume_agrees.pickle" if kind == "pickle" else "dataset__resume_agrees.json"
    said = plant(folder, name, kind, tmp_path)
    kept, refused = remembered_failures(cache, TARGET)
    assert refused == [f"{folder / name}: {refused[0].partition(': ')[2]}"] and "\n" not in refused[0]
    assert said in refused[0], refused[0]
    assert list(kept) == [MATCHES.name]  # the honest file beside it
    assert not (tmp_path / "marker").exists()


def test_a_target_folder_linked_out_of_the_cache_is_not_read(cache, tmp_path):
    outside = tmp_path / "outside"
    kept_folder(cache).rename(outside)
    kept_folder(cache).symlink_to(outside, target_is_directory=True)
    kept, (refused,) = remembered_failures(cache, TARGET)
    assert kept == {} and f"a link to {outside}, outside the cache folder" in refused


def test_a_property_this_harness_does_not_have_is_named(cache):
    (kept_folder(cache) / "dataset__nope.json").write_text("{}")
    kept, (refused,) = remembered_failures(cache, TARGET)
    assert "dataset__nope.json: names no property of this harness" in refused and list(kept) == [MATCHES.name]


def test_a_file_of_another_target_is_refused(cache):
    folder = kept_folder(cache)
    data = json.loads((folder / "dataset__matches_oracle.json").read_text())
    (folder / "dataset__matches_oracle.json").write_text(json.dumps({**data, "target": "impl"}))
    kept, (refused,) = remembered_failures(cache, TARGET)
    assert kept == {} and "holds 'dataset/matches-oracle' on 'impl', not dataset/matches-oracle on known-bug:cache-alias" \
        in refused


def test_a_case_error_names_the_field_and_what_is_allowed():
    with pytest.raises(CaseDataError, match=r"case\.dtype: expected a dtype of float32, float64, bfloat16, got 'int8'"):
        decode({"type": "WindowCase", "fields": {**encode(diffusion.SEED_SCENARIO)["fields"], "dtype": "int8"}}, "case")
    with pytest.raises(CaseDataError, match=r"case: outside the space of WindowCase: batch_kinds must hold"):
        decode({"type": "WindowCase", "fields": {**encode(diffusion.SEED_SCENARIO)["fields"], "window_sizes": [3]}}, "case")
