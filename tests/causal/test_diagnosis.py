"""The causal-LM diagnosis on the labels as served (parity/training/causal/objectives.py, objective_terms.py;
docs/causal-lm.md, Naming the objective): each planted loop of tests/causal/loops.py is named by what it does wrong,
and its correct twin on the same rows holds, on one rank through the loop interface."""

from __future__ import annotations

import re

import pytest
import torch

from oracle.causal_lm import IGNORE_INDEX
from parity.training.causal.drivers.loop import run_loop
from parity.training.causal.objective_terms import departing_words, fit_weights, served_labels
from parity.training.causal.record import CausalCase
from parity.training.causal.rows import case_rows
from parity.training.causal.verdict import causal_verdict
from tests.causal import loops

#: Packed rows, every microbatch supervising, some row's first label supervised and a later document's first label
#: supervised as drawn (the collator serves it -100): a count of every label the rows hold is neither count.
PACKED = CausalCase(window_size=2, steps=1, rows_per_microbatch=2, max_length=8, packed=True, data_seed=0)
#: Two windows of two one-row microbatches: the first supervises in both, the second's first microbatch nothing.
EMPTY_LATER = CausalCase(window_size=2, steps=2, rows_per_microbatch=1, max_length=6, data_seed=0)
#: One document a row, a row's first label supervised in one microbatch only (data seed 3: after the shift 1 and 8,
#: before it 1 and 9), so torchtune's weights depart unpacked too.
UNPACKED = CausalCase(window_size=2, steps=1, rows_per_microbatch=2, max_length=8, data_seed=3)


def verdict(loop, case):
    return causal_verdict(case, [run_loop(loop, case)])


def test_the_cases_hold_what_the_diagnosis_needs():
    rows = [row for window in case_rows(PACKED)[0] for microbatch in window for row in microbatch]
    assert any(document.labels[0] != IGNORE_INDEX for row in rows for document in row.documents[1:])
    assert sum(sum(label != IGNORE_INDEX for label in served_labels(row)) for row in rows) < sum(
        label != IGNORE_INDEX for row in rows for document in row.documents for label in document.labels)
    counts = [[sum(row.supervised for row in microbatch) for microbatch in window] for window in case_rows(EMPTY_LATER)[0]]
    assert all(counts[0]) and 0 in counts[1]


@pytest.mark.parametrize("case", [PACKED, EMPTY_LATER], ids=["packed", "empty-microbatch"])
def test_the_window_rule_loop_holds(case):
    """The correct twin of every planted loop below, on the rows each is caught on."""
    judged = verdict(loops.WINDOW, case)
    assert judged.holds, judged.describe()


def test_a_count_before_the_shift_is_counted_on_the_labels_as_served():
    """transformers 5.5 to 5.9 count the labels != -100 as the collator serves them, a packed row's later documents'
    first labels -100: named so on packed rows too."""
    judged = verdict(loops.BEFORE_SHIFT, PACKED)
    assert judged.failure_kinds == ["normalisation"]
    assert judged.diagnosis.startswith("this run computes the window's sum / the labels != -100 counted before the shift"), judged.diagnosis


def test_a_nan_from_an_empty_microbatch_is_named_beside_the_objective():
    judged = verdict(loops.MICROBATCH_MEAN, EMPTY_LATER)
    assert not judged.holds
    assert judged.diagnosis.startswith("step 1: a microbatch that supervises nothing yields NaN: its mean divides by "
                                       "zero (microbatch 0 supervises no position); on the steps before it, this run "
                                       "computes each microbatch's own mean"), judged.diagnosis


def test_a_nan_in_the_logged_loss_alone_is_never_called_a_wrong_count():
    """A loop whose every gradient follows the window rule but whose logged loss goes through each microbatch's mean
    (torchtune's recipe): the NaN is the logged loss's, the update is right, and the diagnosis says so."""
    judged = verdict(loops.LOGS_MEANS, EMPTY_LATER)
    assert not judged.holds, judged.describe()
    assert judged.diagnosis.startswith("step 1: only the loss the run logs is NaN, every gradient it was handed "
                                       "follows the window rule"), judged.diagnosis
    assert "per-microbatch" not in judged.diagnosis and "microbatch 0 supervises no position" in judged.diagnosis


@pytest.mark.long
def test_a_nan_on_the_first_step_still_names_the_mean_that_divides_by_zero():
    case = CausalCase(window_size=2, steps=1, rows_per_microbatch=1, max_length=6, data_seed=0, empty_ranks=(0,))
    judged = verdict(loops.MICROBATCH_MEAN, case)
    assert judged.diagnosis.startswith("step 0: a microbatch that supervises nothing yields NaN") and (
        "divides each microbatch by its own count" in judged.diagnosis), judged.diagnosis


def test_a_forward_that_joins_a_packed_row_s_documents_is_the_forward_s_fault():
    """A forward handed no ``position_ids`` lets a packed row's documents attend to each other: named as the
    forward's, not as a count; the same loop on the same rows unpacked holds."""
    judged = verdict(loops.NO_POSITIONS, PACKED)
    assert judged.failure_kinds == ["normalisation"]
    assert judged.diagnosis.startswith("the forward lets the documents of a packed row attend to each other"), judged.diagnosis
    assert "follows the window rule's count" in judged.diagnosis
    unpacked = verdict(loops.NO_POSITIONS, UNPACKED)
    assert unpacked.holds, unpacked.describe()


@pytest.mark.parametrize("case", [PACKED, pytest.param(UNPACKED, marks=pytest.mark.long)], ids=["packed", "unpacked"])
def test_torchtune_s_mean_times_before_count_is_named(case):
    """Each microbatch's after-shift mean times its before-shift count, over the window's before-shift count: named
    as torchtune's recipe, never as transformers' count before the shift (which weighs every microbatch alike)."""
    judged = verdict(loops.TORCHTUNE_MEAN, case)
    assert "normalisation" in judged.failure_kinds
    assert judged.diagnosis.startswith("this run computes each microbatch's mean after the shift times its count before "
                                       "it"), judged.diagnosis
    assert "torchtune 0.6.1's full-finetune recipe" in judged.diagnosis


def test_a_rule_outside_the_list_is_named_term_by_term():
    """The window rule with its first microbatch weighed half again: no known normalisation, so the diagnosis names
    the microbatch it weighs off, and by how much; the others keep the rule's weight and are not listed."""
    judged = verdict(loops.FIRST_HALF_AGAIN, PACKED)
    assert "matches none of the known normalisations" in judged.diagnosis
    assert "term by term, one weight per microbatch explains the run" in judged.diagnosis, judged.diagnosis
    said = re.findall(r"step 0 microbatch (\d) \(\d+ supervised after the shift, \d+ before\) ([0-9.e+-]+) x",
                      judged.diagnosis)
    assert [(g, float(ratio)) for g, ratio in said] == [("0", pytest.approx(1.5, rel=1e-3))], judged.diagnosis


def test_the_fitted_weights_are_the_ones_the_gradients_were_made_of():
    """One weight per group recovered from a weighted sum of the rows' gradients; a group with no gradient unweighed;
    one factor on every group is said as a wrong count, unequal factors listed with their ratios."""
    generator = torch.Generator().manual_seed(0)
    grads = [{"w": torch.randn(5, 3, generator=generator, dtype=torch.float64)} for _ in range(3)]
    grads.append({"w": torch.zeros(5, 3, dtype=torch.float64)})
    logged = {"w": 0.25 * (grads[0]["w"] + grads[1]["w"]) + 0.1 * grads[2]["w"]}
    fitted = fit_weights(grads, [[0, 1], [2], [3]], logged)
    assert fitted[0] == pytest.approx(0.25) and fitted[1] == pytest.approx(0.1) and fitted[2] is None
    assert departing_words([("a", 0.5, 1.0), ("b", 0.25, 0.5)]).startswith("every microbatch weighted 0.5 x")
    assert departing_words([("a", 1.0, 1.0), ("b", 0.75, 0.5)], "row") == (
        "1 of 2 weights depart from the window rule's (fitted to the gradients, as a ratio to the window rule's): b 1.5 x")
