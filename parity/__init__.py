"""The harness machinery: targets, comparisons and budgets, devices, the distributed launcher, the report."""
