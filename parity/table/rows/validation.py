"""Bad input refused, the report's ``validation`` scenario (docs/dataset.md, Bad input; docs/trainer.md)."""

from __future__ import annotations

import parity.table.rows.lazy as lazy
from parity.table.record import Property

VALIDATION: tuple[Property, ...] = (
    # --- bad input refused (parity/strategies/bad_input.py): the report's ``validation`` scenario ---
    Property(
        name="validation/dataset-documents",
        interface="dataset",
        check="parity.table.checks.validation:check_refuses_unusable_documents",
        arguments=lambda: lazy.every(lazy.bad_input().BAD_DOCUMENTS),
        examples=lambda: [{"bad": name} for name in lazy.bad_input().BAD_DOCUMENTS],
        only_if="validates_input",
        scenario="validation",
    ),
    Property(
        name="validation/dataset-indices",
        interface="dataset",
        check="parity.table.checks.validation:check_refuses_bad_indices",
        arguments=lambda: lazy.every(lazy.bad_input().BAD_INDICES),
        examples=lambda: [{"bad": name} for name in lazy.bad_input().BAD_INDICES],
        scenario="validation",
    ),
    Property(
        name="validation/loss-arguments",
        interface="loss",
        check="parity.table.checks.validation:check_loss_refuses",
        arguments=lambda: lazy.every(lazy.bad_input().BAD_LOSS_INPUTS),
        examples=lambda: [{"bad": name} for name in lazy.bad_input().BAD_LOSS_INPUTS],
        scenario="validation",
    ),
    Property(
        name="validation/trainer-settings",
        interface="trainer",
        check="parity.table.checks.validation:check_trainer_refuses",
        arguments=lambda: lazy.every(lazy.bad_input().BAD_TRAINER_INPUTS),
        examples=lambda: [{"bad": name} for name in lazy.bad_input().BAD_TRAINER_INPUTS],
        scenario="validation",
        # each example starts a Trainer; the draws only repeat the declared names
        examples_fraction=0.2,
    ),
)
