"""The training wing: what drives a loss or a ``Trainer`` beside the oracle (docs/trainer.md, docs/budget.md).

A loss target through accumulation windows (``window_run``, ``window_cases``), a whole ``Trainer``
run observed from outside (``run``, ``observe``) with what its target ships (``shipped``), its inputs
held to the rows (``input_contract``), its noise replayed (``noise_replay``) and judged beside the
oracle (``verdict``, ``step_compare``; a wrong objective named by ``objectives``), and real multi-process runs (``distributed``,
``ddp_cases``, ``ddp_selfcheck``). It imports only the base and the safety floor; the report and the
table above read its results (docs/design.md, Layout).
"""
