"""The former name of :mod:`parity.training.launch.selfcheck`, kept runnable for the torchrun lines written against
it (``torchrun --nproc-per-node 2 -m parity.training.ddp_selfcheck``)."""

import sys

from parity.training.launch.selfcheck import main

if __name__ == "__main__":
    sys.exit(main())
