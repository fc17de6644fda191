"""The former name of :mod:`parity.training.ddp_selfcheck`, kept runnable for scripts and launch lines
written before the training wing existed (``python -m parity.ddp_selfcheck``, ``torchrun -m parity.ddp_selfcheck``)."""

import sys

from parity.training.ddp_selfcheck import main

if __name__ == "__main__":
    sys.exit(main())
