"""Runs on real ranks, for both halves of the training wing (docs/running.md): the processes, their launcher and
what a rank reports back (``processes.py``), each rank's start before torch is imported (``rank_start.py``), a
test session's one two-rank launch and why a target is not in it (``session.py``), and the launcher's own check
(``selfcheck.py``)."""
