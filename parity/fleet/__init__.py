"""The fleet: the property table at scale, beyond one pytest run (docs/fleet.md, docs/benchmarks.md).

One example database for every profile and machine, keyed by target (``database``), the suite as a
HypoFuzz campaign into it and its replay (``fuzz``), how fast the suite finds each known bug and
what it costs (``bench``), and each finding as a reproducer that needs only the target's own package
(``repro``). It reads the table, the wings and the report's table printer; only the entry
layer (the CLI, the plugin) imports it (tests/harness/test_layers.py).
"""
