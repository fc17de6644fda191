"""docs/benchmarks.md prints ``python -m parity bench``'s own output: its block is
``parity.fleet.bench.format_bench`` of the JSON that command wrote (docs/benchmarks.json), so the figures
and the command beside them cannot drift apart."""

from __future__ import annotations

import json
import re
from pathlib import Path

from parity.fleet.bench import format_bench

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_the_benchmark_page_is_the_bench_commands_output():
    page = (DOCS / "benchmarks.md").read_text()
    assert "python -m parity bench --json docs/benchmarks.json" in page
    (block,) = re.findall(r"```text\n(.*?)\n```", page, flags=re.S)
    assert block == format_bench(json.loads((DOCS / "benchmarks.json").read_text()))
