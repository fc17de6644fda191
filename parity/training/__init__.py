"""The training wing: what drives a loss, a ``Trainer`` or a loop beside the oracle (docs/trainer.md,
docs/causal-lm.md, docs/budget.md), in two halves that read alike, each by role:

- ``diffusion/``: the masked-diffusion loss and trainers: the maths of every normalisation (``objectives``,
  ``objective_terms``, ``counts``), the runners (``drivers/``), the judge (``verdict``);
- ``causal/``: the causal-LM loops and trainers, laid out the same way;

and what both share: the per-step comparison and the significance of a miss (``step_compare``), a run observed
from outside (``observe``), what a trainer target ships (``shipped``), what no float path may change
(``invariance``), and the launch on real ranks with the session's one two-rank launch (``launch/``). The former
names ``ddp_cases`` and ``ddp_selfcheck`` keep documented torchrun lines runnable. It imports only the base and
the safety floor; the report and the table above read its results (docs/design.md, Layout).
"""
