"""What a trainer target may bring: the trainer as it ships, with what it cannot train without.

A research ``transformers.Trainer`` often reads its settings from its own ``TrainingArguments``
subclass, pads with its own collator (the EOS rule applied there), needs a tokenizer, and accepts
only some eps. A target names a :class:`ShippedTrainer` (or a factory returning one) instead of the
bare class, and the harness builds the trainer with those, never by editing it (docs/trainer.md,
What a target may bring). A bare ``Trainer`` subclass is a ``ShippedTrainer`` with nothing added.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from transformers import PreTrainedTokenizerFast, Trainer, TrainingArguments

from parity.trainer_space import PUBLISHED_EPS_DOMAIN, EpsDomain

#: ``ShippedTrainer.collator``: the collator the trainer sets up itself when given none.
TRAINERS_OWN = "the trainer's own"


@dataclass(frozen=True)
class ShippedTrainer:
    """A trainer class and what it ships with. Every field but ``trainer`` is optional.

    * ``arguments``: its ``TrainingArguments`` subclass; the harness fills the fields it controls
      (:data:`parity.training.diffusion.drivers.trainer_run.CONTROLLED_ARGUMENTS`) and leaves the rest at the class's defaults
      or at ``argument_values``, the adapter's own (a controlled field there is a usage error).
    * ``eps_argument``: the field of ``arguments`` the trainer reads its eps from; the harness sets it
      per case (the eps is then declared, as a class attribute ``eps`` declares it).
    * ``collator``: ``processing_class -> collator``, called once per run, or :data:`TRAINERS_OWN`
      (the trainer is given none and sets up its own); None: the harness's ``pad_collate``. Whichever
      it is, the harness wraps it to observe what it served, and the oracle replays that.
    * ``processing_class``: ``model -> tokenizer``; None: :func:`tiny_tokenizer`, the model's ids.
    * ``eps_domain``: the eps the trainer accepts; a drawn case outside runs at the nearest eps inside.
    * ``one_rank_only``: why the trainer trains on one rank only, in words (say, a research loop that never
      gathers its counts); its two-rank cases are declined and a session's distributed tests skip, naming
      this, instead of training it where it never meant to run (docs/trainer.md, Two ranks).
    """

    trainer: type
    arguments: type = TrainingArguments
    argument_values: Mapping[str, Any] = field(default_factory=dict)
    eps_argument: str | None = None
    collator: Callable[[Any], Callable] | str | None = None
    processing_class: Callable[[Any], Any] | None = None
    eps_domain: EpsDomain = PUBLISHED_EPS_DOMAIN
    one_rank_only: str | None = None

    def __post_init__(self):
        if not (isinstance(self.trainer, type) and issubclass(self.trainer, Trainer)):
            raise TypeError(f"ShippedTrainer.trainer must be a transformers.Trainer subclass, got {self.trainer!r}")
        if not (isinstance(self.arguments, type) and issubclass(self.arguments, TrainingArguments)):
            raise TypeError(f"ShippedTrainer.arguments must be a TrainingArguments subclass, got {self.arguments!r}")
        known = {f.name for f in fields(self.arguments)}
        unknown = sorted(set(self.argument_values) - known)
        unknown += [self.eps_argument] if self.eps_argument not in known | {None} else []
        if unknown:
            raise ValueError(f"{self.arguments.__name__} has no field {', '.join(unknown)}: argument_values and eps_argument "
                             "name fields of the trainer's arguments class")
        if isinstance(self.collator, str) and self.collator != TRAINERS_OWN:
            raise ValueError(
                f"ShippedTrainer.collator is a factory, None or TRAINERS_OWN ({TRAINERS_OWN!r}), got {self.collator!r}"
            )
        if self.one_rank_only is not None and not (isinstance(self.one_rank_only, str) and self.one_rank_only.strip()):
            raise TypeError(f"ShippedTrainer.one_rank_only says why the trainer trains on one rank only, in words; "
                            f"got {self.one_rank_only!r}")

    @property
    def __name__(self) -> str:
        return self.trainer.__name__

    def tokenizer(self, model):
        return tiny_tokenizer(model.config) if self.processing_class is None else self.processing_class(model)

    def collator_for(self, tokenizer, default: Callable) -> Callable | None:
        """The ``data_collator`` to construct the trainer with: its own (None: it sets one up), the
        adapter's factory's, or ``default`` (the harness's)."""
        if self.collator is None:
            return default
        return None if self.collator == TRAINERS_OWN else self.collator(tokenizer)


def as_shipped(subject) -> ShippedTrainer:
    """What a target's ``trainer`` path names, as a :class:`ShippedTrainer`: a ``Trainer`` subclass,
    a ``ShippedTrainer``, or a factory (a callable of no arguments) returning either."""
    if isinstance(subject, ShippedTrainer):
        return subject
    if isinstance(subject, type) and issubclass(subject, Trainer):
        return ShippedTrainer(subject)
    if callable(subject) and not isinstance(subject, type):
        made = subject()
        if isinstance(made, ShippedTrainer) or (isinstance(made, type) and issubclass(made, Trainer)):
            return as_shipped(made)
        subject = made
    raise TypeError(
        "a trainer target names a transformers.Trainer subclass, a parity ShippedTrainer, or a factory "
        f"returning one; got {subject!r}"
    )


def tiny_tokenizer(config) -> PreTrainedTokenizerFast:
    """A word-level tokenizer over the model's vocabulary, built offline: ``<s>``, ``</s>`` (also the
    pad token, as the model's ``pad_token_id`` says) and ``<mask>`` (where the model has one) at the model's
    ids, ``<unk>`` at 0, ``t<i>`` for every other id. What a trainer reads off a ``processing_class`` (the
    special ids, ``pad``, ``len``) is then the model's; the causal LM's (docs/causal-lm.md) has no mask."""
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import WhitespaceSplit

    mask = getattr(config, "mask_token_id", None)
    names = {0: "<unk>", config.bos_token_id: "<s>", config.eos_token_id: "</s>"} | ({} if mask is None else {mask: "<mask>"})
    vocab = {names.get(i, f"t{i}"): i for i in range(config.vocab_size)}
    backend = Tokenizer(WordLevel(vocab, unk_token="<unk>"))
    backend.pre_tokenizer = WhitespaceSplit()
    return PreTrainedTokenizerFast(
        tokenizer_object=backend, unk_token="<unk>", bos_token="<s>", eos_token="</s>", pad_token=names[config.pad_token_id],
        **({} if mask is None else {"mask_token": "<mask>"}),
    )
