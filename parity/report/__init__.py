"""The report wing: ``python -m parity``'s side-by-side verdict (docs/design.md, Layout).

Its scenarios (``scenarios``, ``dataset``) run the training and dataset wings beside the oracle;
``model`` is what a report holds, and ``text``, ``markdown`` and ``html`` render it. It is the one
wing that reads other wings' results, and no wing imports it; the property table's scenario joins
it from the floor above (parity/table/scenario.py, tests/harness/test_layers.py).
"""
