"""The former name of :mod:`parity.training.ddp_cases`, kept runnable for scripts and launch lines
written before the training wing existed (``python -m parity.ddp_cases``, ``torchrun -m parity.ddp_cases``)."""

import sys

from parity.training.ddp_cases import main

if __name__ == "__main__":
    sys.exit(main())
