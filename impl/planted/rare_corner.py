"""impl's dataset with a bug planted in one rare corner: the fleet search's quarry (docs/fleet.md).

On the test split, with ``num_epochs=3`` given, no extra token, an odd sequence length and an odd
seed, the shuffle index comes out reversed, so the samples are served in the wrong order; everywhere
else it is impl's dataset. No explicit example of the table reaches the corner (the corner cases give
two epochs or none) and about one drawn dataset case in 670 does, behind four nested branches: a bug
the default run's 25 derandomized examples a property miss and a fleet finds (two workers' 1000
nightly examples of each of the two catching properties reach it about six times). The dataset properties that compare samples
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
                    if config.sequence_length % 2 == 1 and config.random_seed % 2 == 1:
                        self.shuffle_index = self.shuffle_index[::-1].copy()
