"""Every property of the table, as a test against the selected target (parity.table.rows)."""

from parity.suite.collect import property_test, shrink_budget  # noqa: F401 (the fixture of the bounded properties)
from parity.table.rows import PROPERTIES

globals().update({prop.test_name: property_test(prop) for prop in PROPERTIES})
