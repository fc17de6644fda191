"""The drivers that run a masked-diffusion loss or trainer and record what it did (docs/trainer.md): a loss target
through accumulation windows (``window_run.py``, its cases ``window_cases.py``), a whole ``Trainer`` run
(``trainer_run.py``) with its inputs held to the rows (``input_contract.py``), its noise replayed
(``noise_replay.py``) and float16 loss scaling as CUDA has it (``loss_scaling.py``), and a trainer on real ranks
(``ranks.py``, the entry point torchrun runs)."""
