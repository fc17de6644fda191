"""The field's own loops written up for their maintainers: a pytest file per defect that needs only the library
(docs/causal-lm.md, The field's own loops, Reproducers; ``python -m parity repro --target litgpt:fit``).

A loop target fails on a training run, and its verdict is the harness's; a maintainer of litgpt or torchtune reads
neither the harness nor its oracle. What each defect needs is arithmetic on one accumulation window's rows: each
microbatch's supervised count before and after the shift. So the writer takes a window of the failing case that
shows the defect (the ranks' microbatches side by side: on one process each library's arithmetic over ranks is the
same), shrinks it by that arithmetic alone to the fewest microbatches, rows and tokens that still show it (the hunt
never shrinks a whole-run property: each try is a training run), and writes a file that builds the library's own
model at a tiny size, runs the library's own training code on the window, reads the gradients handed to
``optimizer.step()`` with a step pre-hook and holds them (or the logged loss) to the window rule computed in the
file in float64 (:mod:`parity.fleet.repro_loop_texts`).

Each defect the library is known to have gets its file. The hunt stops at its first failing case, which shows one
of them (torchtune's packed corner shows the count before the shift, not the empty window), and each needs a fix of
its own upstream; so a defect the failing case does not show is written from the first of the suite's corner cases
(``CAUSAL_CORNERS``) that shows it, and the file names the case its rows came from.

Each file is checked as the dataset reproducers are (:func:`parity.fleet.repro_check.run_file`): in a fresh pytest it
must fail on the library as installed and pass beside a ``conftest.py`` that makes the library follow the window
rule for that run only (litgpt: each microbatch's summed loss over the window's count, times the accumulation
iterations fit divides by; torchtune: the recipe's count taken after the shift, its scale and an empty microbatch's
mean guarded). A file that does not is not kept.
"""

from __future__ import annotations

import dataclasses
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from oracle.causal_lm import IGNORE_INDEX, TINY_CAUSAL_CONFIG
from parity.cases import CausalCase
from parity.fleet import repro_loop_texts as texts
from parity.fleet.repro_check import Reproducer, failure_line, run_file
from parity.fleet.repro_files import slug, versions
from parity.strategies.causal import CAUSAL_CORNERS
from parity.targets import Target
from parity.training.causal.drivers.batches import flat_row
from parity.training.causal.rows import case_rows

#: ``window[g][r]``: row ``r`` of microbatch ``g``, its ids and its labels aligned with them, as the library is handed
#: them (a row of several documents side by side, each later document's first label -100, as the harness serves it).
Window = list[list[tuple[list[int], list[int]]]]


def counts(window: Window, shifted: bool = True) -> list[int]:
    """Each microbatch's supervised labels after the shift (a row's first label is never predicted) or before it."""
    return [sum(label != IGNORE_INDEX for _, labels in microbatch for label in labels[1 if shifted else 0:])
            for microbatch in window]


def per_microbatch_means(window: Window) -> bool:
    """litgpt: each microbatch's mean over ``G`` weighs a token ``1 / (G n_g)``, the rule ``1 / N``."""
    n = counts(window)
    return any(c and len(n) * c != sum(n) for c in n)


def count_before_the_shift(window: Window) -> bool:
    """torchtune: microbatch g weighs ``(b_g / a_g) / B`` where the rule weighs ``1 / A``; no microbatch empty (its NaN
    is a defect of its own)."""
    after, before = counts(window), counts(window, shifted=False)
    return all(after) and any(b * sum(after) != a * sum(before) for a, b in zip(after, before, strict=True))


def empty_microbatch(window: Window) -> bool:
    """torchtune: a microbatch's mean of nothing is 0/0, NaN in the logged loss; the window itself supervises, and no
    row's first label (counted before the shift: a defect of its own)."""
    after = counts(window)
    return 0 in after and sum(after) > 0 and after == counts(window, shifted=False)


def empty_window(window: Window) -> bool:
    """torchtune: ``scale_grads(world_size / 0)`` where no label is supervised, before the shift or after."""
    return sum(counts(window, shifted=False)) == 0


@dataclass(frozen=True)
class Defect:
    name: str
    shows: Callable[[Window], bool]
    sentence: str  # the header's first line, after the target's name
    held: str  # what the test holds to the window rule
    test: str


@dataclass(frozen=True)
class Library:
    packages: tuple[str, ...]
    imports: str
    code: str
    fixed: str  # the conftest.py that makes the library follow the window rule, for the check on a fix
    model: str  # what the file trains, said in its header
    defects: tuple[Defect, ...]


GRADIENTS = "the gradients handed to optimizer.step(), read with a step pre-hook,"
LIBRARIES = {
    "litgpt:fit": Library(
        ("litgpt", "lightning", "torch"), texts.LITGPT_IMPORTS, texts.LITGPT, texts.LITGPT_FIXED,
        "litgpt's own GPT at a tiny config, its weights drawn from seed 0, through litgpt.finetune.full.fit on a "
        "Lightning Fabric, one device; Tokenizer, validate and generate_example swapped for the call (none is on the "
        "training step's path)",
        (Defect("per_microbatch_means", per_microbatch_means,
                "fit averages each microbatch's own mean over the window instead of dividing the window's summed "
                "loss once by its supervised count (litgpt/finetune/full.py:284-285)", GRADIENTS,
                texts.LITGPT_PER_MICROBATCH),)),
    "torchtune:full-finetune": Library(
        ("torchtune", "torchao", "torchdata", "torch"), texts.TORCHTUNE_IMPORTS, texts.TORCHTUNE, texts.TORCHTUNE_FIXED,
        "torchtune's own llama3 at a tiny size, its weights drawn from seed 0, through the shipped "
        "recipes/full_finetune_distributed.py train() on one process, the recipe made with __new__ and given what "
        "setup(cfg) builds from files (FSDP2 sharding of one rank left out: it changes no number here)",
        (Defect("count_before_the_shift", count_before_the_shift,
                "the recipe counts a row's first label, which nothing predicts, so a microbatch whose row supervises it "
                "is weighed wrongly (recipes/full_finetune_distributed.py:778-781 against 802)", GRADIENTS,
                texts.TORCHTUNE_COUNT_BEFORE_THE_SHIFT),
         Defect("empty_microbatch", empty_microbatch,
                "a microbatch that supervises nothing makes the logged loss NaN "
                "(torchtune/modules/loss/ce_chunked_output_loss.py:83)", "the loss the recipe logs (to its metric logger)",
                texts.TORCHTUNE_EMPTY_MICROBATCH),
         Defect("empty_window", empty_window,
                "a window that supervises nothing makes every gradient NaN (scale_grads(world_size / 0), "
                "recipes/full_finetune_distributed.py:829)", GRADIENTS, texts.TORCHTUNE_EMPTY_WINDOW))),
}

def writes_up_loop(prop, target: Target) -> bool:
    return prop.interface == "loop" and target.name in LIBRARIES


# --- windows ----------------------------------------------------------------------------------------------


def windows(case: CausalCase) -> list[Window]:
    """Each step's window, the ranks' microbatches side by side."""
    rows = case_rows(case)
    return [[[flat_row(row)[:2] for row in rank[k][g]] for rank in rows for g in range(len(rank[k]))]
            for k in range(case.steps)]


def _smaller(window: Window):
    """Each window one step smaller: a microbatch fewer, a row fewer in every microbatch (the libraries batch them
    evenly), a row a token shorter (a row keeps two tokens: one prediction)."""
    if len(window) > 1:
        yield from (window[:g] + window[g + 1:] for g in range(len(window)))
    if len(window[0]) > 1:
        yield from ([microbatch[:r] + microbatch[r + 1:] for microbatch in window] for r in range(len(window[0])))
    for g, microbatch in enumerate(window):
        for r, (ids, labels) in enumerate(microbatch):
            for i in range(len(ids) if len(ids) > 2 else 0):
                shorter = [*microbatch[:r], (ids[:i] + ids[i + 1:], labels[:i] + labels[i + 1:]), *microbatch[r + 1:]]
                yield [*window[:g], shorter, *window[g + 1:]]


def shrunk(window: Window, shows: Callable[[Window], bool]) -> Window:
    """The window made smaller, one step at a time, while it still shows the defect."""
    smaller = next((candidate for candidate in _smaller(window) if shows(candidate)), None)
    return window if smaller is None else shrunk(smaller, shows)


def _short(case: CausalCase) -> str:
    changed = [f"{f.name}={getattr(case, f.name)!r}" for f in dataclasses.fields(case)
               if getattr(case, f.name) != f.default]
    return f"CausalCase({', '.join(changed)})"


def window_showing(defect: Defect, failing: CausalCase) -> tuple[Window, str] | None:
    """(the smallest window that shows ``defect``, where it came from): the failing case first, then the suite's."""
    for case in (failing, *CAUSAL_CORNERS):
        for k, window in enumerate(windows(case)):
            if defect.shows(window):
                whose = "the case the hunt failed on" if case is failing else "the suite's case"
                ranks = f" (its {case.world_size} ranks' microbatches side by side)" if case.world_size > 1 else ""
                return shrunk(window, defect.shows), f"window {k + 1} of {whose} {_short(case)}{ranks}"
    return None


# --- the file ---------------------------------------------------------------------------------------------


def _window_literal(window: Window) -> str:
    lines = [f"VOCAB = {TINY_CAUSAL_CONFIG['vocab_size']}",
             "#: One accumulation window: its microbatches, each a list of rows (input_ids, labels aligned with them,",
             "#: -100 where nothing is supervised).", "WINDOW = ["]
    for g, (microbatch, after, before) in enumerate(zip(window, counts(window), counts(window, shifted=False),
                                                         strict=True)):
        lines.append(f"    [  # microbatch {g}: {after} supervised after the shift, {before} before")
        lines += [f"        ({list(ids)!r}, {list(labels)!r})," for ids, labels in microbatch]
        lines.append("    ],")
    return "\n".join([*lines, "]"]) + "\n"


def reproducer_text(target: Target, defect: Defect, window: Window, origin: str, command: str) -> str:
    library = LIBRARIES[target.name]
    said = [f"{target.name}: {defect.sentence}.",
            (f"Rows: {origin}, shrunk to the fewest microbatches, rows and tokens that still show it. The model: "
             f"{library.model}. The test holds {defect.held} to the window rule computed here in float64: every "
             "row's summed next-token cross-entropy over its supervised positions after the shift, divided once by "
             "the window's supervised count after the shift.")]
    header = ('"""' + "\n\n".join(textwrap.fill(paragraph, 116, break_on_hyphens=False) for paragraph in said) +
              f"\n\nFailed on {versions(*library.packages)}.\nRegenerate: {command}\n"
              'Written by the parity harness (python -m parity repro); it needs only the packages it imports.\n"""\n')
    return header + library.imports + "\n" + _window_literal(window) + library.code + defect.test


def write_loop_reproducers(prop, target: Target, failing: dict, command: str, out: Path, say) -> list[Reproducer]:
    """A file per defect of ``target``'s library, each kept only if it fails on the library and passes on the fix."""
    library, written = LIBRARIES[target.name], []
    for defect in library.defects:
        found = window_showing(defect, failing["case"])
        if found is None:
            say(f"{prop.name} ({defect.name}): no window of the failing case or the suite's corners shows it; "
                "nothing to write")
            continue
        path = out / f"test_{slug(target.name.replace(':', '_'))}__{defect.name}.py"
        path.write_text(reproducer_text(target, defect, *found, command))
        result = run_file(path)
        reproducer = Reproducer(prop.name, path, True, result.returncode == 1,
                                run_file(path, library.fixed).returncode == 0, failure_line(result))
        if not reproducer.kept:
            path.unlink()
            say(f"{prop.name} ({defect.name}): the written file did not reproduce (fails on the library: "
                f"{reproducer.fails_on_target}, passes on the fix: {reproducer.passes_on_fixed}); not kept")
        else:
            say(f"{prop.name} ({defect.name}): wrote {path} ({len(path.read_text().splitlines())} lines): "
                f"{reproducer.message}")
        written.append(reproducer)
    return written
