"""The trainers of ``research_trainer.py`` as their targets ship them (docs/trainer.md, What a target may bring).

``RESEARCH`` is the research trainer with its arguments class, its eps field and its EOS collator;
``EOS_COLLATED`` a trainer that sets up that collator itself (the harness wraps the trainer's own);
``OPEN_EPS`` a trainer that refuses eps = 1. Each is correct, and held to the whole-run property, the
report and two ranks (``test_shipped.py``). ``ONE_RANK`` is ``OPEN_EPS`` declaring it trains on one rank only:
its two-rank cases are declined, naming why (``test_ddp.py``, ``test_ddp_session.py``).
"""

from __future__ import annotations

from dataclasses import replace

from parity.trainer_space import EpsDomain
from parity.training.shipped import TRAINERS_OWN, ShippedTrainer
from tests.training.research_trainer import (
    DiffusionArguments,
    EosCollatingTrainer,
    EosPaddingCollator,
    OpenEpsTrainer,
    ResearchDiffusionTrainer,
)

OPEN_AT_ONE = EpsDomain(high_closed=False)
RESEARCH = ShippedTrainer(
    ResearchDiffusionTrainer, arguments=DiffusionArguments, eps_argument="time_epsilon", collator=EosPaddingCollator,
    eps_domain=OPEN_AT_ONE,
)
EOS_COLLATED = ShippedTrainer(EosCollatingTrainer, collator=TRAINERS_OWN)
OPEN_EPS = ShippedTrainer(OpenEpsTrainer, eps_domain=OPEN_AT_ONE)
ONE_RANK = replace(OPEN_EPS, one_rank_only="a research loop written for one GPU")
#: Every shipped trainer, by the name the tests give it.
SHIPPED = {"research": RESEARCH, "eos-collator": EOS_COLLATED, "open-eps": OPEN_EPS}
