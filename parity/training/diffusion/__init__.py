"""The masked-diffusion half of the training wing (docs/trainer.md), laid out as the causal half is: the
normalisations a run may follow and the one a failing run computes (``objectives.py``, term by term in
``objective_terms.py``; a window's count in its dtype, ``counts.py``), the drivers that run a loss or a ``Trainer``
and record what it did (``drivers/``), and the verdict beside the oracle (``verdict.py``). The oracle is
:mod:`oracle.nemotron_diffusion`."""
