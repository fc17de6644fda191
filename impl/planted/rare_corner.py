"""impl's dataset with a bug planted in one rare corner: the fleet search's quarry (docs/fleet.md).

On the test split, with ``num_epochs=3`` given, no extra token and sequences of 7 tokens or more,
the shuffle index comes out reversed, so the samples are served in the wrong order; everywhere else
it is impl's dataset. No explicit example of the table reaches the corner (the corner cases give two
epochs or none) and about one drawn dataset case in 500 does, behind four nested branches. The last
branch asks for long sequences, which Hypothesis draws late: its first examples are small, so the
default run's 25 derandomized examples a property miss the corner (from the repository or from
another directory), while two workers' 1000 nightly examples find it. Rarity under independent draws
is not enough: a corner of small values (an odd length, a seed other than 0) was reached early. The dataset properties that compare samples
or indices with the oracle catch it; the ones that compare the target with itself cannot.
"""

from __future__ import annotations

from impl.gpt_dataset import GPTDataset


class RareCornerGPTDataset(GPTDataset):
    def __init__(self, documents, config) -> None:
        super().__init__(documents, config)
        if config.split == "test":
            if config.num_epochs == 3:
                if not config.add_extra_token_to_sequence:
                    if config.sequence_length >= 7:
                        self.shuffle_index = self.shuffle_index[::-1].copy()
