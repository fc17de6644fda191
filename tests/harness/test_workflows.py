"""The fleet's two workflows (docs/fleet.md): the fuzz workflow writes the database every pull request replays.

Read as YAML: every ``python -m parity`` line parses with the CLI's own parser and names a known
target, the artifact the fuzz workflow uploads is the one the pull requests read, and every target
fuzzed at night is replayed in a pull request. And every env of tox.ini's test matrix runs somewhere
(docs/install.md, The test matrix).
"""

from __future__ import annotations

import configparser
import re
import shlex
from pathlib import Path

import yaml

from parity.__main__ import cli_parser
from parity.fleet.database import database_setting
from parity.targets import OPTIONAL_TARGETS, get_target

REPOSITORY = Path(__file__).resolve().parents[2]
WORKFLOWS = REPOSITORY / ".github" / "workflows"
ARTIFACT = "parity-example-db"


def _job(name: str) -> dict:
    workflow = yaml.safe_load((WORKFLOWS / f"{name}.yml").read_text())
    (job,) = workflow["jobs"].values()
    return workflow, job


def _parity_commands(job: dict) -> list[list[str]]:
    lines = [line for step in job["steps"] for line in step.get("run", "").splitlines()]
    return [shlex.split(line)[3:] for line in lines if line.startswith("python -m parity ")]


def _parsed(job: dict, command: str) -> list:
    """The job's ``python -m parity COMMAND`` lines as the CLI parses them, each naming a known target: a
    default or planted one, or an optional one (megatron-core's) whose package the job itself installs, so
    the check needs nothing optional here (a fresh ``pip install -e '.[test]'`` passes it)."""
    parsed = [cli_parser().parse_args(arguments) for arguments in _parity_commands(job) if arguments[0] == command]
    optional = {target.name: target for target in OPTIONAL_TARGETS}
    installs = " ".join(step.get("run", "") for step in job["steps"] if "pip install" in step.get("run", ""))
    for args in parsed:
        if args.target in optional:
            assert f"{optional[args.target].requires}==" in installs, f"{args.target}: the job never installs its package"
        else:
            get_target(args.target)
    return parsed


def test_the_fuzz_workflow_fuzzes_into_the_artifact_it_uploads():
    workflow, job = _job("fuzz")
    assert "schedule" in workflow[True] and job["timeout-minutes"] <= 360  # YAML reads the key `on` as True
    campaigns = _parsed(job, "fuzz")
    assert campaigns and sum(args.seconds for args in campaigns) < job["timeout-minutes"] * 60
    location = job["env"]["PARITY_DATABASE"]
    assert database_setting(location, "read-write", "nightly").mode == "read-write"
    uses = {step.get("uses", "").partition("@")[0]: step for step in job["steps"]}
    download = uses["dawidd6/action-download-artifact"]["with"]
    assert (download["name"], download["path"]) == (ARTIFACT, location)
    upload = uses["actions/upload-artifact"]
    assert upload["if"] == "always()" and upload["with"]["name"] == ARTIFACT and upload["with"]["path"] == location
    assert any("hypofuzz" in step.get("run", "") for step in job["steps"])


def test_every_pull_request_replays_what_the_fleet_found():
    workflow, job = _job("pr-replay")
    assert "pull_request" in workflow[True]
    assert workflow["permissions"]["actions"] == "read" and job["env"]["GITHUB_TOKEN"]
    location = job["env"]["PARITY_DATABASE"]
    assert location.endswith(f"/{ARTIFACT}") and location.startswith("github-artifact://")
    assert database_setting(location.replace("${{ github.repository }}", "owner/repo"), None, "ci").mode == "read-only"
    assert any(step.get("run", "").strip() == "pytest -n auto" for step in job["steps"])  # impl, the default target
    replayed = {"impl", *(args.target for args in _parsed(job, "replay"))}
    fuzzed = {args.target for args in _parsed(_job("fuzz")[1], "fuzz")}
    assert fuzzed <= replayed, f"fuzzed at night but never replayed in a pull request: {sorted(fuzzed - replayed)}"


def _matrix_envs() -> set[str]:
    """tox.ini's ``labels = matrix`` envs, their ``{a,b}`` factors expanded (an env without factors is itself)."""
    tox = configparser.ConfigParser(interpolation=None)
    tox.read(REPOSITORY / "tox.ini")
    envs = set()
    for section in tox.sections():
        if section.startswith("testenv:") and "matrix" in tox[section].get("labels", ""):
            prefix, _, factors = re.fullmatch(r"testenv:(.*?)(\{(.*)\})?", section).groups()
            envs |= {prefix + factor for factor in factors.split(",")} if factors else {prefix}
    return envs


def test_every_matrix_env_runs_somewhere():
    """docs/install.md, The test matrix: in the CPU workflow's matrix or in .ci/run, each exactly once."""
    _, job = _job("matrix-cpu")
    in_workflow = job["strategy"]["matrix"]["env"]
    in_ci = re.findall(r"^tox -e (\S+)$", (REPOSITORY / ".ci" / "run").read_text(), flags=re.MULTILINE)
    assert sorted([*in_workflow, *in_ci]) == sorted(_matrix_envs())
