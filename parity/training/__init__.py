"""The training wing: what drives a loss or a ``Trainer`` beside the oracle (docs/trainer.md, docs/budget.md).

A loss target through accumulation windows (``window_run``, ``window_cases``), a whole ``Trainer``
run observed from outside (``run``, ``observe``), its noise replayed (``noise_replay``) and judged
beside the oracle (``verdict``, ``step_compare``), and real multi-process runs (``distributed``,
``ddp_cases``, ``ddp_selfcheck``). It imports only the base; the report reads its results
(docs/design.md, Layout).
"""
