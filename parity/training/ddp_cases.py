"""The former name of :mod:`parity.training.diffusion.drivers.ranks`, kept runnable for the torchrun lines written
against it (``torchrun --nproc-per-node 2 -m parity.training.ddp_cases --target impl``)."""

import sys

from parity.training.diffusion.drivers.ranks import main

if __name__ == "__main__":
    sys.exit(main())
