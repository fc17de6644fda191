"""The properties: one module of plain check functions per area (dataset, diffusion, training).

A check raises ``AssertionError`` on a counterexample; the property table (parity.property_table)
says what each is drawn from and which known bugs it must catch.
"""
