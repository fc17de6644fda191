"""A ``transformers.Trainer`` observed from outside: what it served, fed the model, and did to the weights.

Nothing is asked of the trainer (docs/trainer.md, The seam). The harness's collator records every
batch it serves; a forward pre-hook on the model records the keywords the model is called with, a
forward hook which of the output's ``loss`` / ``logits`` the trainer reads, and a pre-hook on the
input embedding the ids the encoder actually receives (under every contract, fused heads
included); one callback handler records the gradients before each optimizer step (under ``fp16=True``'s loss
scaling: once the scaler's step has unscaled them) and the parameters after it, and whether the
scaler skipped the step. Every observation is also a point of the generator *timeline*: the global
CPU generator's state, consecutive duplicates kept once, which the noise replay
(``parity.training.diffusion.drivers.noise_replay``) explains the forwards' masks with.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import torch
from transformers import TrainerCallback
from transformers.utils import ModelOutput

#: Every event a callback can receive; one handler takes them all.
EVENTS = tuple(name for name in vars(TrainerCallback) if name.startswith("on_"))
#: The model keywords the replay and the contract need.
WATCHED_KWARGS = ("input_ids", "labels", "masked_indices", "p_mask")
#: The output fields whose reads tell the contracts apart.
WATCHED_FIELDS = ("loss", "logits")


@dataclass
class ServedBatch:
    """A batch the collator handed out, the rows it was made from, and the timeline position just after it was collated."""

    batch: dict[str, torch.Tensor]
    collated_at: int
    examples: list[dict] = field(default_factory=list)


@dataclass
class ObservedForward:
    """One forward pass of the harness's model, as the encoder saw it."""

    phase: str
    noisy_ids: torch.Tensor
    #: The watched keywords passed to the model's forward; None when the trainer never called the
    #: model itself (a fused head runs the encoder and the output embedding directly).
    kwargs: dict[str, torch.Tensor] | None
    #: Timeline position of the generator when the embedding received the ids.
    seen_at: int
    #: Which of the output's ``loss`` / ``logits`` the trainer read.
    reads: set[str] = field(default_factory=set)

    @property
    def contract(self) -> str:
        """``loss-pair`` when the model was given labels and its ``.loss`` was not left unread for
        ``.logits``; ``logits`` otherwise (docs/trainer.md, The model contract, as observed)."""
        if self.kwargs is None or "labels" not in self.kwargs:
            return "logits"
        return "logits" if self.reads == {"logits"} else "loss-pair"

    @property
    def how(self) -> str:
        if self.kwargs is None:
            return "the encoder and the output embedding called directly, never the model"
        passed = ", ".join(key for key in WATCHED_KWARGS if key in self.kwargs)
        read = " and ".join(f".{name}" for name in WATCHED_FIELDS if name in self.reads) or "no output field"
        return f"model({passed}), {read} read"


@functools.cache
def _read_recording(output_class: type) -> type:
    """A subclass of ``output_class`` that notes which watched fields are read, by attribute or key."""

    def note(output, name):
        reads = object.__getattribute__(output, "__dict__").get("_parity_reads")
        if reads is not None and name in WATCHED_FIELDS:
            reads.add(name)

    def __getattribute__(self, name):
        note(self, name)
        return output_class.__getattribute__(self, name)

    def __getitem__(self, key):
        if isinstance(key, str):
            note(self, key)
        return output_class.__getitem__(self, key)

    namespace = {"__getattribute__": __getattribute__, "__getitem__": __getitem__, "__module__": __name__}
    return type(output_class.__name__, (output_class,), namespace)


class RunObserver(TrainerCallback):
    """Hooks, collator and one callback handler: the run as seen from outside, on a generator timeline."""

    def __init__(self, model: torch.nn.Module):
        self.model = model
        self.phase = "train"
        #: The global CPU generator's states, consecutive duplicates dropped.
        self.timeline: list[torch.Tensor] = []
        self.batches: dict[str, list[ServedBatch]] = {}
        self.forwards: list[ObservedForward] = []
        #: Train forwards run when each optimizer step began.
        self.window_ends: list[int] = []
        self.grads: list[dict[str, torch.Tensor | None]] = []
        self.params: list[dict[str, torch.Tensor]] = []
        #: Under ``fp16=True``: the loss scale each step's gradients were divided by, and whether the
        #: scaler skipped the step (its scaled gradients overflowed).
        self.loss_scales: list[float] = []
        self.skipped: list[bool] = []
        #: (optimizer step, ``num_items_in_batch``) of every training ``compute_loss`` call, as the Trainer passed it.
        self.counts: list[tuple[int, object]] = []
        self._call: dict[str, torch.Tensor] | None = None
        self._handles = [
            model.register_forward_pre_hook(self._on_model_call, with_kwargs=True),
            model.register_forward_hook(self._on_model_output),
            model.get_input_embeddings().register_forward_pre_hook(self._on_embedding),
        ]
        for event in EVENTS:
            setattr(self, event, functools.partial(self._on_event, event))
        self.snapshot()

    def close(self) -> None:
        for handle in self._handles:
            handle.remove()

    def snapshot(self) -> int:
        """Record the generator's state; its timeline position."""
        state = torch.get_rng_state()
        if not self.timeline or not torch.equal(self.timeline[-1], state):
            self.timeline.append(state)
        return len(self.timeline) - 1

    def collator(self, collate):
        """``collate`` (the harness's, or the one the trainer ships with), recording each batch it
        serves (its tensors) and the rows it was given, copied before it can change them."""

        def observed(examples):
            rows = [{key: list(value) if isinstance(value, list) else value for key, value in e.items()} for e in examples]
            batch = collate(examples)
            served = {key: value.detach().cpu().clone() for key, value in batch.items() if isinstance(value, torch.Tensor)}
            self.batches.setdefault(self.phase, []).append(ServedBatch(served, self.snapshot(), rows))
            return batch

        return observed

    def compute_loss(self, compute_loss):
        """``compute_loss`` (the trainer's), recording the count the Trainer hands each training call: the
        window's, which the trainer divides by (docs/trainer.md, Counts)."""

        def observed(model, inputs, *args, **kwargs):
            if model.training:
                count = kwargs.get("num_items_in_batch", args[1] if len(args) > 1 else None)
                self.counts.append((len(self.window_ends), count.detach().cpu() if isinstance(count, torch.Tensor) else count))
            return compute_loss(model, inputs, *args, **kwargs)

        return observed

    def contracts(self) -> dict[str, str]:
        """Each model contract the run used, with what showed it (first seen first)."""
        seen: dict[str, str] = {}
        for forward in self.forwards:
            seen.setdefault(forward.contract, forward.how)
        return seen

    # --- hooks ------------------------------------------------------------------------------------

    def _on_model_call(self, module, args, kwargs):
        self.snapshot()
        named = dict(zip(("input_ids",), args)) | kwargs
        self._call = {
            key: named[key].detach().cpu().clone() for key in WATCHED_KWARGS if isinstance(named.get(key), torch.Tensor)
        }

    def _on_embedding(self, module, args):
        seen_at = self.snapshot()
        self.forwards.append(ObservedForward(self.phase, args[0].detach().cpu().clone(), self._call, seen_at))
        self._call = None

    def _on_model_output(self, module, args, output):
        if isinstance(output, ModelOutput) and self.forwards:
            output.__class__ = _read_recording(type(output))
            output.__dict__["_parity_reads"] = self.forwards[-1].reads

    # --- the one callback handler: every event is a point of the timeline -------------------------

    def _on_event(self, event, args, state, control, **kwargs):
        self.snapshot()
        optimizer = kwargs.get("optimizer")
        scaler = getattr(optimizer, "scaler", None)
        if event == "on_pre_optimizer_step":
            self.window_ends.append(sum(f.phase == "train" for f in self.forwards))
            self.loss_scales.append(1.0 if scaler is None else float(scaler.get_scale()))
            if scaler is None:
                self.grads.append(self._grads())
        elif event == "on_optimizer_step":
            # Under loss scaling the gradients are read after the scaler's step, by which they are
            # unscaled exactly once, whoever asked first (transformers unscales them before
            # on_pre_optimizer_step to log their norm; a trainer that does not leaves them scaled there).
            if scaler is not None:
                self.grads.append(self._grads())
            self.skipped.append(bool(getattr(optimizer, "step_was_skipped", False)))
            self.params.append({n: p.detach().cpu().clone() for n, p in self.model.named_parameters()})

    def _grads(self) -> dict[str, torch.Tensor | None]:
        return {n: None if p.grad is None else p.grad.detach().cpu().clone() for n, p in self.model.named_parameters()}
