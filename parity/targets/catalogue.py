"""The targets this repository ships (docs/design.md, Targets and interfaces): impl and the known bugs every run
shows, the planted twins, the causal-LM trainers, and the optional built-ins that exist only where their package is
installed. Each is a plain :class:`parity.targets.interfaces.Target`; nothing here is imported until named."""

from __future__ import annotations

from parity.safety.releases import transformers_trainer_defects
from parity.targets.interfaces import Target

BUILTIN_TARGETS: tuple[Target, ...] = (
    Target(
        name="impl",
        description="the production code of this repository",
        expect="pass",
        dataset="parity.dataset.impl:impl_dataset",
        loss="impl.diffusion_loss:WINDOWED_LOSS",
        trainer="impl.trainer:WindowedDiffusionTrainer",
        causal_trainer="impl.causal_trainer:WindowedCausalTrainer",
        promises_copies=True,
        validates_input=True,
    ),
    Target(
        name="known-bug:cache-alias",
        description="dataset cache stores the first sample's loss mask by reference",
        expect="fail",
        dataset="parity.dataset.impl:cache_alias_dataset",
    ),
    Target(
        name="known-bug:cache-accumulate",
        description="dataset cache hands out the cached loss mask itself on every hit",
        expect="fail",
        dataset="parity.dataset.impl:cache_accumulate_dataset",
    ),
    Target(
        name="known-bug:local-mean",
        description="per-microbatch normalisation; the trainer averages the local means",
        expect="fail",
        loss="impl.known_bugs.local_mean:LOCAL_MEAN_LOSS",
        trainer="impl.known_bugs.local_mean_trainer:LocalMeanTrainer",
    ),
    Target(
        name="logits",
        description="a second trainer in the logits style: its own 1/p-weighted loss from .logits, masks kept local",
        expect="pass",
        trainer="impl.logits_trainer:LogitsDiffusionTrainer",
    ),
    Target(
        name="known-bug:logits-local-mean",
        description="the logits-style trainer before its fix: local means, the Trainer divides by the accumulation steps",
        expect="fail",
        trainer="impl.known_bugs.logits_local_mean_trainer:LogitsLocalMeanTrainer",
    ),
    Target(
        name="known-bug:causal-local-mean",
        description="impl's causal-LM trainer before its fix: per-microbatch means, the Trainer divides by the "
        "accumulation steps (every transformers.Trainer before 4.46)",
        expect="fail",
        causal_trainer="impl.known_bugs.causal_local_mean_trainer:CausalLocalMeanTrainer",
    ),
)

#: Causal-LM trainers from outside the repository (docs/causal-lm.md, Trainers and their contract per release):
#: selectable by name (``--target``); the report's ``causal-lm`` scenario shows impl's and its known bug by default.
CAUSAL_TARGETS: tuple[Target, ...] = (
    Target(
        name="transformers-trainer",
        description="transformers' own Trainer as shipped, training a causal LM with the model's own loss",
        expect="fail" if transformers_trainer_defects() else "pass",
        causal_trainer="transformers:Trainer",
        upstream_defects=transformers_trainer_defects(),
    ),
)

#: TRL's ``SFTTrainer`` as shipped, in each of its ways of batching (docs/causal-lm.md, TRL).
TRL_TARGETS: tuple[Target, ...] = tuple(
    Target(name=f"trl-sft:{name}", description=f"TRL's SFTTrainer as shipped, {words}",
           expect="fail" if transformers_trainer_defects(trl_mode=name) else "pass",
           causal_trainer=f"parity.training.causal.drivers.trl_sft:{mode}", requires="trl",
           upstream_defects=transformers_trainer_defects(trl_mode=name))
    for name, mode, words in (
        ("completion-only", "COMPLETION_ONLY", "completion_only_loss on padded microbatches"),
        ("padding-free", "PADDING_FREE", "padding_free: each microbatch flattened, positions restarting per document"),
        ("packing", "PACKING", "packing with packing_strategy='bfd'"),
    )
)

#: megatron-core 0.16.1's index helper rejects its own sample index when a kept partial sample
#: ends in an empty document (docs/dataset.md, Crashes).
MEGATRON_INDEX_CRASH = "AssertionError at megatron/core/datasets/helpers.py"

#: torchtitan 0.3.0 raises on a window that supervises nothing, after stepping its optimizer with the window rule's
#: zero gradient: its logged loss is 0/0 (docs/causal-lm.md, The field's own loops).
TORCHTITAN_NOT_FINITE = "RuntimeError at torchtitan/trainer.py"

#: Built-ins that need megatron-core (the ``megatron`` extra; docs/install.md).
OPTIONAL_TARGETS: tuple[Target, ...] = (
    Target(
        name="megatron-core",
        description="megatron-core's own GPTDataset, as installed (has the cache bug)",
        expect="fail",
        dataset="parity.dataset.megatron:megatron_dataset",
        pipeline="parity.dataset.megatron_pipeline:megatron_pipeline",
        reads_files=True,
        requires="megatron-core",
        companion="megatron-core:fixed",
        known_crashes=(MEGATRON_INDEX_CRASH,),
        upstream_defects=(
            "the loss-mask cache (FILL stores the first sample's masks by reference)",
            "the index cache key (it leaves out add_extra_token_to_sequence and drop_last_partial_validation_sequence)",
        ),
    ),
    Target(
        name="megatron-core:fixed",
        description="megatron-core's GPTDataset fixed: a copy cached on FILL, the index settings in the cache key",
        expect="pass",
        dataset="parity.dataset.megatron:fixed_megatron_dataset",
        pipeline="parity.dataset.megatron_pipeline:fixed_megatron_pipeline",
        reads_files=True,
        requires="megatron-core",
        companion="megatron-core",
        known_crashes=(MEGATRON_INDEX_CRASH,),
    ),
    Target(
        name="megatron-core:mock",
        description="megatron-core's MockGPTDataset over its MockGPTLowLevelDataset (--mock-data), as installed",
        expect="fail",
        mock="parity.dataset.megatron_mock:mock_dataset",
        requires="megatron-core",
        companion="megatron-core:mock:fixed",
        known_crashes=(MEGATRON_INDEX_CRASH,),
    ),
    Target(
        name="megatron-core:mock:fixed",
        description="megatron-core's MockGPTDataset with the upstream fix only: a copy cached on FILL",
        expect="pass",
        mock="parity.dataset.megatron_mock:fixed_mock_dataset",
        requires="megatron-core",
        companion="megatron-core:mock",
        known_crashes=(MEGATRON_INDEX_CRASH,),
    ),
    Target(
        name="megatron-schedule:per-token",
        description="megatron-core's own schedule and DDP training a causal LM, calculate_per_token_loss on",
        expect="pass",
        loop="parity.training.causal.drivers.megatron_schedule:PER_TOKEN",
        requires="megatron-core",
        companion="megatron-schedule",
    ),
    Target(
        name="megatron-schedule",
        description="megatron-core's own schedule and DDP training a causal LM, as configured by default "
        "(calculate_per_token_loss off: per-microbatch means divided by num_microbatches)",
        expect="fail",
        loop="parity.training.causal.drivers.megatron_schedule:DEFAULT",
        requires="megatron-core",
        companion="megatron-schedule:per-token",
    ),
    # The field's own loops as they ship (docs/causal-lm.md, The field's own loops): each expected verdict is the
    # one the library's source predicts, cited there by file and line.
    Target(
        name="litgpt:fit",
        description="litgpt's full finetune fit() as shipped on Lightning Fabric (ddp on the CPU, where Lightning "
        "refuses FSDP): each microbatch's own mean, averaged over the window and the ranks",
        expect="fail",
        loop="parity.training.causal.drivers.libraries.litgpt_fit:FIT",
        requires="litgpt",
        upstream_defects=(
            "per-microbatch means averaged over the window (litgpt/finetune/full.py:284-285, "
            "chunked_cross_entropy's own mean at litgpt/utils.py:351): not the window's sum over its count",
        ),
    ),
    Target(
        name="torchtune:full-finetune",
        description="torchtune's full-finetune recipe train() as shipped, FSDP2 through training.shard_model: each "
        "microbatch's mean after the shift times its count before it, over the window's count before the shift",
        expect="fail",
        loop="parity.training.causal.drivers.libraries.torchtune_recipe:FULL_FINETUNE",
        requires="torchtune",
        upstream_defects=(
            "the count taken before the shift (recipes/full_finetune_distributed.py:778-781) against the loss's mean "
            "after it (802): a row whose first label is supervised weighs its microbatch wrongly",
            "the logged loss is NaN when a microbatch supervises nothing (CEWithChunkedOutputLoss's 0/0, "
            "torchtune/modules/loss/ce_chunked_output_loss.py:83, all-reduced into running_loss)",
            "every gradient is NaN when the window supervises nothing (scale_grads(world_size / 0), "
            "recipes/full_finetune_distributed.py:829)",
        ),
    ),
    Target(
        name="torchtitan:train-step",
        description="torchtitan's Trainer.train_step as shipped, FSDP2 with its own gradient division disabled: the "
        "window's sum over its count summed over the ranks (max_norm out of reach)",
        expect="pass",
        loop="parity.training.causal.drivers.libraries.torchtitan_step:TRAIN_STEP",
        requires="torchtitan",
        known_crashes=(TORCHTITAN_NOT_FINITE,),
    ),
)


#: Bugs planted for the harness's tests of its own search (docs/fleet.md): selectable by name, never a
#: column of the report or bench, since the default run is not meant to find them.
PLANTED_TARGETS: tuple[Target, ...] = (
    Target(
        name="planted:rare-corner",
        description="impl's dataset serving the shuffle reversed, only on the test split with num_epochs=3, no "
        "extra token and sequences of 7 tokens or more (a rare corner, planted for the fleet search)",
        expect="fail",
        dataset="parity.dataset.impl:rare_corner_dataset",
    ),
)
