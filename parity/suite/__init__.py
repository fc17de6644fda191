"""The property suite as an installed package: ``pytest --pyargs parity.suite --parity-target NAME``.

Its tests are generated from :data:`parity.table.rows.PROPERTIES`, so it runs from any
directory, against any registered target, without a clone of the repository.
"""
