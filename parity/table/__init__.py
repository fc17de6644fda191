"""The property table (docs/design.md, Properties): one record per property, in the spirit of PyTorch's OpInfo.

The records themselves (``rows``: which properties exist, the known bugs each must catch), the record
type and how one example of it is run (``record``), a record hunted under Hypothesis until it fails
(``hunt``) within its example and shrink budgets (``run_budget``), the check functions (``checks``), and
the report's ``properties`` scenario that runs every record (``scenario``). It stands on the wings and
the report wing (a check drives a wing; the scenario is a report scenario), and is read by the fleet
and the entry points above it; nothing below imports it (tests/harness/test_layers.py).
"""
