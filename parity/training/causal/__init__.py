"""The causal-LM half of the training wing (docs/causal-lm.md): the window rule's objectives and their maths
(``objectives.py``), the drivers that run a loop and record what it did (``drivers/``), and the verdict with its
diagnosis (``verdict.py``). The oracle is :mod:`oracle.causal_lm`."""
