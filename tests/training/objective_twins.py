"""One twin of the logits trainer per known wrong objective (docs/trainer.md, Naming the objective).

Each draws the published noise and normalises wrongly in one known way; the verdict must fail it
with ``normalisation`` and its diagnosis must name that objective (``parity.training.diffusion.objectives``). The
local-mean twins are the known-bug targets (``impl.known_bugs``).
"""

from __future__ import annotations

from impl.known_bugs.local_mean_trainer import LocalMeanTrainer
from impl.known_bugs.logits_local_mean_trainer import LogitsLocalMeanTrainer
from impl.logits_trainer import LogitsDiffusionTrainer

IGNORE_INDEX = -100


class SumOfMicrobatchMeansTrainer(LogitsDiffusionTrainer):
    """Each microbatch divided by its own count, and says so: the Trainer sums them."""

    window_normalised = False


class DividedTwiceTrainer(LogitsDiffusionTrainer):
    """The window's count, and the Trainer left to divide by the accumulation steps too."""

    loss_is_scaled_for_ga = False


class RankLocalTrainer(LogitsDiffusionTrainer):
    """Never gathers the count over ranks, though ``average_tokens_across_devices`` asks it to."""

    def _gathered(self) -> bool:
        return False


class PerMicrobatchTrainer(LogitsDiffusionTrainer):
    """Each training microbatch divided by a count of its own (``denominator``), not its masked tokens;
    summed over the window (``loss_is_scaled_for_ga``) or averaged by the Trainer."""

    window_normalised = False

    def denominator(self, inputs):
        raise NotImplementedError

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        training = model.training and num_items_in_batch is not None and bool(self._window_noise)
        masked = self._window_noise[0][2].sum() if training else None
        result = super().compute_loss(model, inputs, return_outputs, num_items_in_batch)
        if not training:
            return result
        loss = (result[0] if return_outputs else result) * masked.clamp(min=1) / self.denominator(inputs).clamp(min=1)
        return (loss, {**result[1], "loss": loss}) if return_outputs else loss


def _twin(name: str, denominator, summed: bool) -> type:
    return type(name, (PerMicrobatchTrainer,), {"denominator": denominator, "loss_is_scaled_for_ga": summed,
                                                "__module__": __name__})


def _supervised(self, inputs):
    return (inputs["labels"] != IGNORE_INDEX).sum()


def _tokens(self, inputs):
    return inputs["input_ids"].new_tensor(inputs["input_ids"].numel())


def _rows(self, inputs):
    return inputs["input_ids"].new_tensor(inputs["input_ids"].shape[0])


SupervisedSumTrainer = _twin("SupervisedSumTrainer", _supervised, True)
SupervisedMeanTrainer = _twin("SupervisedMeanTrainer", _supervised, False)
TokensSumTrainer = _twin("TokensSumTrainer", _tokens, True)
TokensMeanTrainer = _twin("TokensMeanTrainer", _tokens, False)
RowsSumTrainer = _twin("RowsSumTrainer", _rows, True)
RowsMeanTrainer = _twin("RowsMeanTrainer", _rows, False)

#: Each twin, by the name of the objective ``parity.training.diffusion.objectives`` must give it.
TWINS = {
    "local mean": LogitsLocalMeanTrainer,
    "sum of microbatch means": SumOfMicrobatchMeansTrainer,
    "supervised, summed": SupervisedSumTrainer,
    "supervised, averaged": SupervisedMeanTrainer,
    "tokens, summed": TokensSumTrainer,
    "tokens, averaged": TokensMeanTrainer,
    "rows, summed": RowsSumTrainer,
    "rows, averaged": RowsMeanTrainer,
    "divided twice": DividedTwiceTrainer,
}
#: Twins only two ranks tell apart from the published objective.
TWO_RANK_TWINS = {"rank-local": RankLocalTrainer}
#: impl's own local-mean twin (the published loss-pair contract), named like the logits one.
IMPL_LOCAL_MEAN = LocalMeanTrainer
