"""The property table's checks: one module of plain check functions per area (dataset, pipeline,
diffusion, training).

A check raises ``AssertionError`` on a counterexample; the table's records (parity.table.rows) say
what each is drawn from and which known bugs it must catch. A check drives a wing and judges with the
base; it is part of the table, so no wing or report module imports it.
"""
