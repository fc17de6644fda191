"""The references: slow, obvious and independent, so a shared mistake cannot hide in both sides.

Nothing here imports ``impl`` or ``parity`` (``tests/harness/test_oracle_independence.py`` enforces it).
"""
