"""The harness, in floors by role (docs/design.md, Layout; tests/harness/test_layers.py).

At the top level only the base every wing stands on (``cases``, ``dataset_config``, ``targets``,
``contracts``, ``devices``; ``budget``, ``compare``) and the entry points (``__main__``, ``pytest_plugin``). Below the
base the ``safety`` floor; above it ``strategies``, the ``dataset`` and ``training`` wings, the
``report``, the property ``table``, the ``fleet``, and the installed ``suite``.
"""
