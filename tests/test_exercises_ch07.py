"""Tests for the chapter 7 exercises (bertcourse.exercises.ch07).

The wrong answers are written the way a learner would write them, so the tests check that
real mistakes get a message naming them.
"""
import math

import pytest
import torch
import torch.nn.functional as F

from bertcourse.data import num_mlm_preds
from bertcourse.pretrain import mlm_loss
from bertcourse.exercises import ch07
from bertcourse.exercises.ch07 import q1, q2, q3, q4, q5
from bertcourse.pretrain import mlm_accuracy
from test_exercises import assert_fails_with, assert_leaves_global_rng_alone, assert_passes_with


def test_references_are_the_package_functions_and_agree_with_plain_torch():
    assert q1.check(ch07._ref_loss) and q2.check(ch07._ref_acc) and q3.check(ch07._ref_count)
    logits, labels, weights = ch07.Q1_CASES[0][1]
    real = weights.reshape(-1) > 0
    by_hand = F.cross_entropy(logits.reshape(-1, logits.shape[-1])[real], labels.reshape(-1)[real])
    torch.testing.assert_close(ch07._ref_loss(logits, labels, weights), by_hand)
    logits, labels, weights = ch07.Q2_CASES[0][1]
    right = [(logits[b, i].argmax() == labels[b, i]).item() for b in range(3) for i in range(4) if weights[b, i] > 0]
    assert ch07._ref_acc(logits, labels, weights).item() == pytest.approx(sum(right) / len(right))
    assert 0 < sum(right) < len(right)                      # the case has right and wrong answers
    assert [ch07._ref_count(n, p) for n, p, _ in ch07.Q3_CASES] == [3, 2, 1, 3, 8, 7, 32, 1]


def test_cases_include_edge_cases():
    assert any((w.sum(1) == 0).any() for _, (_, _, w) in ch07.Q1_CASES)          # a row without predictions
    assert any(l.abs().max() > 30 for _, (l, _, _) in ch07.Q1_CASES)             # large logits
    assert any((w == 0).any() and (l.argmax(-1)[w == 0] == lab[w == 0]).any()    # padding "right" by chance
               for _, (l, lab, w) in ch07.Q2_CASES)


# --- typical wrong answers name the mistake ---------------------------------------------

def flat(mlm_logits, mlm_labels):
    return mlm_logits.reshape(-1, mlm_logits.shape[-1]), mlm_labels.reshape(-1)


def q1_plain_mean(mlm_logits, mlm_labels, mlm_weights):
    """fails: the padding slots count in your loss"""
    return F.cross_entropy(*flat(mlm_logits, mlm_labels))


def q1_mean_then_weights(mlm_logits, mlm_labels, mlm_weights):
    """fails: the padding slots count in your loss"""
    # the classic: reduction='mean', then "apply" the weights
    loss = F.cross_entropy(*flat(mlm_logits, mlm_labels))
    return (loss * mlm_weights.reshape(-1)).sum() / mlm_weights.sum()


def q1_sum(mlm_logits, mlm_labels, mlm_weights):
    """fails: you returned the weighted sum"""
    per = F.cross_entropy(*flat(mlm_logits, mlm_labels), reduction="none")
    return (per * mlm_weights.reshape(-1)).sum()


def q1_over_slots(mlm_logits, mlm_labels, mlm_weights):
    """fails: you divided by the number of slots"""
    per = F.cross_entropy(*flat(mlm_logits, mlm_labels), reduction="none")
    return (per * mlm_weights.reshape(-1)).mean()


def q1_over_batch(mlm_logits, mlm_labels, mlm_weights):
    """fails: you divided by the batch size"""
    per = F.cross_entropy(*flat(mlm_logits, mlm_labels), reduction="none")
    return (per * mlm_weights.reshape(-1)).sum() / mlm_logits.shape[0]


def q1_log_of_softmax(mlm_logits, mlm_labels, mlm_weights):
    # mathematically right, numerically not: log(softmax) underflows to -inf for large logits
    probs = torch.softmax(mlm_logits, dim=-1)
    picked = probs.gather(-1, mlm_labels.unsqueeze(-1)).squeeze(-1)
    return (-torch.log(picked) * mlm_weights).sum() / mlm_weights.sum()


def test_q1_log_of_softmax_fails_on_large_logits_only():
    assert_fails_with(q1, q1_log_of_softmax, "large logits")


# shape and dtype slips: the check names the mistake with the case's sizes, in the exercise's names
GOT = ("Your function got mlm_logits: shape (2, 4, 9), float32; mlm_labels: shape (2, 4), int64; mlm_weights: "
       "shape (2, 4), float32. It must return a single number, a tensor of shape (), float32.")


def q1_3d_logits(mlm_logits, mlm_labels, mlm_weights):
    """fails: F.cross_entropy reads the classes from axis 1"""
    per_slot = F.cross_entropy(mlm_logits, mlm_labels, reduction="none")      # forgot to flatten
    return (per_slot * mlm_weights).sum() / mlm_weights.sum()


def q1_3d_logits_mean(mlm_logits, mlm_labels, mlm_weights):
    """fails: or move the vocabulary to axis 1: mlm_logits.transpose(1, 2)"""
    return F.cross_entropy(mlm_logits, mlm_labels)


def q1_labels_flat_only(mlm_logits, mlm_labels, mlm_weights):
    """fails: you flattened one of them but not the other"""
    per_slot = F.cross_entropy(mlm_logits, mlm_labels.reshape(-1), reduction="none")
    return (per_slot * mlm_weights.reshape(-1)).sum() / mlm_weights.sum()


def q1_logits_flat_only(mlm_logits, mlm_labels, mlm_weights):
    """fails: you flattened one of them but not the other"""
    per_slot = F.cross_entropy(mlm_logits.reshape(-1, mlm_logits.shape[-1]), mlm_labels, reduction="none")
    return (per_slot * mlm_weights.reshape(-1)).sum() / mlm_weights.sum()


def q1_weights_not_flat(mlm_logits, mlm_labels, mlm_weights):
    """fails: Flatten the weights too, mlm_weights.reshape(-1)"""
    return (F.cross_entropy(*flat(mlm_logits, mlm_labels), reduction="none") * mlm_weights).sum() / mlm_weights.sum()


def q1_transposed_losses_flat_weights(mlm_logits, mlm_labels, mlm_weights):
    """fails: the per-slot losses and the weights must have the same shape"""
    per_slot = F.cross_entropy(mlm_logits.transpose(1, 2), mlm_labels, reduction="none")   # (batch, num_preds)
    return (per_slot * mlm_weights.reshape(-1)).sum() / mlm_weights.sum()


def q1_logits_one_vector(mlm_logits, mlm_labels, mlm_weights):
    """fails: flattens the vocabulary axis away too"""
    per_slot = F.cross_entropy(mlm_logits.reshape(-1), mlm_labels.reshape(-1), reduction="none")
    return (per_slot * mlm_weights.reshape(-1)).sum() / mlm_weights.sum()


def q1_float_labels(mlm_logits, mlm_labels, mlm_weights):
    """fails: the targets of F.cross_entropy are the class ids"""
    logits, labels = flat(mlm_logits, mlm_labels)
    per_slot = F.cross_entropy(logits, labels.float(), reduction="none")
    return (per_slot * mlm_weights.reshape(-1)).sum() / mlm_weights.sum()


def q1_weights_as_targets(mlm_logits, mlm_labels, mlm_weights):
    """fails: mlm_weights in their place"""
    logits, _ = flat(mlm_logits, mlm_labels)
    return F.cross_entropy(logits, mlm_weights.reshape(-1))


def q1_gather_without_last_axis(mlm_logits, mlm_labels, mlm_weights):
    """fails: mlm_labels[..., None], (2, 4, 1), then .squeeze(-1)"""
    picked = torch.log_softmax(mlm_logits, dim=-1).gather(-1, mlm_labels).squeeze(-1)
    return -(picked * mlm_weights).sum() / mlm_weights.sum()


@pytest.mark.parametrize("wrong, phrases", [
    (q1_3d_logits, ["(The error: RuntimeError: Expected target size [2, 9], got [2, 4]) — F.cross_entropy reads "
                    "the classes from axis 1: given mlm_logits of shape (batch, num_preds, vocab) = (2, 4, 9), it "
                    "took the 4 slots for the classes and wanted labels of shape (batch, vocab) = (2, 9), not "
                    "mlm_labels, (2, 4).", "mlm_logits.reshape(-1, vocab), (8, 9), and mlm_labels.reshape(-1), (8,)"]),
    (q1_3d_logits_mean, ["Expected target size [2, 9], got [2, 4]", "reads the classes from axis 1"]),
    (q1_labels_flat_only, ["Expected input batch_size (2) to match target batch_size (8)",
                           "F.cross_entropy met 8 rows and 2 labels (or 2 rows and 8 labels)"]),
    (q1_logits_flat_only, ["Expected input batch_size (8) to match target batch_size (2)",
                           "mlm_logits.reshape(-1, vocab) is (8, 9) and mlm_labels.reshape(-1) is (8,)"]),
    (q1_weights_not_flat, ["must match the size of tensor b (4)", "the losses are (8,), one per slot, but "
                           "mlm_weights is (batch, num_preds) = (2, 4)"]),
    (q1_transposed_losses_flat_weights, ["must match the size of tensor b (8)", "Flatten the weights too"]),
    (q1_logits_one_vector, ["For 1D input", "into one vector of 72 numbers", "(8, 9), one row of 9 logits"]),
    (q1_float_labels, ["expected target dtype to be Long or Byte, but got Float", "mlm_labels (int64)"]),
    (q1_weights_as_targets, ["expected target dtype to be Long or Byte", "use the weights only to weight"]),
    (q1_gather_without_last_axis, ["Index tensor must have the same number of dimensions",
                                   "(batch, num_preds, vocab) = (2, 4, 9)"]),
])
def test_q1_shape_and_dtype_slips_are_named_with_the_sizes(wrong, phrases):
    # the arguments by the exercise's names (mlm_logits, ...), the result's shape, torch's error, then the mistake
    assert_fails_with(q1, wrong, "the shapes or dtypes in your code do not fit together. " + GOT, *phrases)


def q1_d2l_weights_column(mlm_logits, mlm_labels, mlm_weights):
    """fails: it broadcasts to a (8, 8) table, every loss times every weight"""
    # d2l's mlm_weights_X.reshape(-1, 1), kept next to reduction='none'
    per_slot = F.cross_entropy(*flat(mlm_logits, mlm_labels), reduction="none")
    return (per_slot * mlm_weights.reshape(-1, 1)).sum() / (mlm_weights.sum() + 1e-8)


def q1_softmax_over_slots(mlm_logits, mlm_labels, mlm_weights):
    """fails: your log_softmax normalised over axis 1, the num_preds slots"""
    picked = torch.log_softmax(mlm_logits, dim=1).gather(-1, mlm_labels[..., None]).squeeze(-1)
    return -(picked * mlm_weights).sum() / mlm_weights.sum().clamp(min=1e-8)


def q1_nll_of_logits(mlm_logits, mlm_labels, mlm_weights):
    """fails: F.nll_loss expects log-probabilities"""
    per_slot = F.nll_loss(*flat(mlm_logits, mlm_labels), reduction="none")
    return (per_slot * mlm_weights.reshape(-1)).sum() / mlm_weights.sum().clamp(min=1e-8)


def q1_vocab_first_reshape(mlm_logits, mlm_labels, mlm_weights):
    """fails: reshape keeps the order of the numbers in memory"""
    rows = mlm_logits.reshape(mlm_logits.shape[-1], -1).T         # (batch * num_preds, vocab), scrambled
    per_slot = F.cross_entropy(rows, mlm_labels.reshape(-1), reduction="none")
    return (per_slot * mlm_weights.reshape(-1)).sum() / mlm_weights.sum().clamp(min=1e-8)


@pytest.mark.parametrize("wrong, phrase", [
    (q1_d2l_weights_column, "mlm_weights.reshape(-1, 1) is a column, (8, 1): times the (8,) per-slot losses it "
                            "broadcasts to a (8, 8) table"),
    (q1_softmax_over_slots, "your log_softmax normalised over axis 1, the num_preds slots"),
    (q1_nll_of_logits, "F.nll_loss expects log-probabilities"),
    (q1_vocab_first_reshape, "mlm_logits.reshape(vocab, -1).T has the right shape"),
])
def test_q1_near_misses_get_a_nudge(wrong, phrase):
    assert_fails_with(q1, wrong, "first difference at index ()", " — " + phrase)


def test_q1_d2ls_line_is_named_as_the_notebook_promises():
    """Chapter 7's pitfall "the MLM loss with reduction='mean'" says exercise 1 names d2l's line:
    nn.CrossEntropyLoss() (a mean), times the weights as a column, divided by their sum."""
    loss = torch.nn.CrossEntropyLoss()

    def d2l(mlm_logits, mlm_labels, mlm_weights):
        vocab_size = mlm_logits.shape[-1]
        mlm_l = loss(mlm_logits.reshape(-1, vocab_size), mlm_labels.reshape(-1)) * mlm_weights.reshape(-1, 1)
        return mlm_l.sum() / (mlm_weights.sum() + 1e-8)

    assert_fails_with(q1, d2l, "the padding slots count in your loss", "reduction='mean'")


def test_q1_no_predictions_row_is_handled_by_the_solution_and_the_reference():
    logits, labels, weights = ch07.Q1_CASES[2][1]
    assert torch.isfinite(mlm_loss(logits, labels, weights))


def q2_all_slots(mlm_logits, mlm_labels, mlm_weights):
    """fails: padding included"""
    return (mlm_logits.argmax(-1) == mlm_labels).float().mean()


def q2_count(mlm_logits, mlm_labels, mlm_weights):
    """fails: you returned the number of right answers"""
    return ((mlm_logits.argmax(-1) == mlm_labels) & (mlm_weights > 0)).sum().float()


def q2_over_slots(mlm_logits, mlm_labels, mlm_weights):
    """fails: you divided by the number of slots"""
    return (((mlm_logits.argmax(-1) == mlm_labels) & (mlm_weights > 0)).sum() / mlm_weights.numel()).float()


def q2_argmax_over_slots(mlm_logits, mlm_labels, mlm_weights):
    """fails: first difference"""
    real = mlm_weights > 0
    guess = mlm_logits.argmax(1)[:, :mlm_labels.shape[1]]     # argmax over the wrong axis
    return ((guess == mlm_labels) & real).sum().float() / real.sum()


def q3_floor(num_tokens, mask_prob):
    """fails: you rounded down"""
    return max(1, int(num_tokens * mask_prob))


def q3_python_round(num_tokens, mask_prob):
    """fails: Python's round() rounds halves to the even number"""
    return max(1, round(num_tokens * mask_prob))


def q3_no_minimum(num_tokens, mask_prob):
    """fails: every sequence gets at least one prediction"""
    return math.floor(num_tokens * mask_prob + 0.5 + 1e-9)


def q3_ceil(num_tokens, mask_prob):
    """fails: you rounded up"""
    return math.ceil(num_tokens * mask_prob)


def q3_no_epsilon(num_tokens, mask_prob):
    """fails: floating point: 90 * 0.35 is 31.499999999999996"""
    return max(1, math.floor(num_tokens * mask_prob + 0.5))


def test_q3_accepts_tensors_and_floats_that_are_whole_numbers():
    assert q3.check(lambda n, p: torch.tensor(num_mlm_preds(n, p))).status == "pass"
    assert q3.check(lambda n, p: float(num_mlm_preds(n, p))).status == "pass"
    assert q3.check(lambda n, p: n * p).status == "fail"
    assert q3.check("three").status == "fail"


@pytest.mark.parametrize("answer", ["B", "b", " B ", "B)"])
def test_q4_right_letter_in_any_spelling(answer):
    assert q4.check(answer).status == "pass"


@pytest.mark.parametrize("answer, phrase", [
    ("A", "a model without grammar"), ("C", "80% of the chosen positions"),
    ("D", "a single token of the vocabulary"), ("E", "must be one of A, B, C, D"),
])
def test_q4_wrong_letters_explain_why(answer, phrase):
    assert_fails_with(q4, answer, phrase)
    assert q4.check(2).status == "fail"


def test_q2_reference_matches_the_evaluation_accuracy():
    logits, labels, weights = ch07.Q2_CASES[2][1]
    assert mlm_accuracy(logits, labels, weights).item() == pytest.approx(
        ((logits.argmax(-1) == labels) & (weights > 0)).sum().item() / (weights > 0).sum().item())


# --- Q5: predict the first loss with a decoder of its own -----------------------------------

def test_q5_experiment_tells_the_story():
    default, bert = ch07.first_mlm_loss(bert_init=False), ch07.first_mlm_loss(bert_init=True)
    own = ch07.first_mlm_loss(bert_init=False, tied=False)
    assert default["ln_vocab"] == bert["ln_vocab"] == own["ln_vocab"] == pytest.approx(math.log(3000))
    assert abs(bert["loss"] - bert["ln_vocab"]) < 0.1 and bert["logit_std"] < 0.5
    assert default["loss"] > 2 * default["ln_vocab"] and default["logit_std"] > 4       # chapter 5's tied N(0, 1)
    # a decoder of its own: nn.Linear's default (uniform in ±1/8) gives logits spread by about
    # sqrt(64) * 0.125 / sqrt(3) = 0.58, so the loss is about ln|V| + 0.58² / 2
    assert own["logit_std"] == pytest.approx(0.58, abs=0.05)
    assert abs(own["loss"] - own["ln_vocab"]) < 0.3
    assert ch07._q5_category(own["loss"], own["ln_vocab"]) == "same"
    assert ch07._q5_category(default["loss"], default["ln_vocab"]) == "higher"
    assert [ch07._q5_category(x, 10.0) for x in (7.9, 8.0, 12.5, 12.6)] == ["lower", "same", "same", "higher"]


def test_q5_answer_holds_for_other_seeds():
    for seed in (1, 2):
        own = ch07.first_mlm_loss(bert_init=False, seed=seed, tied=False)
        assert ch07._q5_category(own["loss"], own["ln_vocab"]) == "same", (seed, own)


def test_q5_experiment_leaves_the_global_rng_alone():
    assert_leaves_global_rng_alone(lambda: ch07.first_mlm_loss(bert_init=False, tied=False), ch07._first_losses)


@pytest.mark.parametrize("answer", ["same", "Same", " SAME\n"])
def test_q5_right_choice_in_any_spelling(answer):
    assert_passes_with(q5, answer, "decoder of its own", "tied to the N(0, 1) table: 33.1")


@pytest.mark.parametrize("answer, phrase", [("higher", "no longer that table"), ("lower", "cannot do better")])
def test_q5_wrong_choices_explain_why(answer, phrase):
    result = assert_fails_with(q5, answer, phrase)
    assert "same" not in result.message.split("(stuck?")[0]            # the answer is not given away


@pytest.mark.parametrize("bad", ["up", "much higher", "higher?", 3, ["higher"]])
def test_q5_choices_outside_the_list_are_refused_with_the_options(bad):
    assert_fails_with(q5, bad, "'same', 'higher', 'lower'")
