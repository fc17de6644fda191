"""The safety layer: what a session (a pytest run or the CLI) puts around target code so that every
fault ends in a verdict (docs/faults.md).

The bound on every target call (``bounds``) and where a target raised (``crash``, ``call_target``), no
process the harness starts outliving its parent (``parent_death``), interrupts and signals ending a run
with its own status (``interrupts``), the per-test bound and crash-safe xdist scheduling added to pytest
(``runner``, ``xdist_scheduling``), CPU sharing between workers (``threads``), the Hypothesis profiles
(``profiles``), the releases supported (``releases``), and usage errors and atomic writes (``usage``).
It is the bottom floor: it imports nothing else of parity, so the base and every wing may stand on it
(tests/harness/test_layers.py).
"""
