"""Every property of the table, as a test against the selected target (parity.table.rows)."""

# The fixtures the generated tests use: a property that does not apply skips before Hypothesis runs; the bounded ones' budget.
from parity.suite.collect import applicable, property_test, shrink_budget  # noqa: F401
from parity.table.rows import PROPERTIES

globals().update({prop.test_name: property_test(prop) for prop in PROPERTIES})
