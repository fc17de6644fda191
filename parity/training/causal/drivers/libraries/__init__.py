"""The field's own training loops as they ship, judged through the loop interface (docs/causal-lm.md, The field's
own loops): litgpt's finetune ``fit``, torchtune's full-finetune recipe ``train()`` and torchtitan's
``Trainer.train_step``. Each module imports its library; nothing here is imported until its target is named."""
