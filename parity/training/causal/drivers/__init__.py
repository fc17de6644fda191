"""The drivers that run a causal-LM loop and record what it did, one :class:`parity.training.causal.record.CausalRecord`
per rank (docs/causal-lm.md): a ``transformers.Trainer``, TRL's ``SFTTrainer``, a training step the user writes
(``loop.py``) and megatron-core's schedule through it (``megatron_schedule.py``)."""
