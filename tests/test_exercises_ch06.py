"""Tests for the chapter 6 exercises (bertcourse.exercises.ch06).

The wrong answers below are written the way a learner would write them (not imported
from the module), so the tests check that real mistakes get a message naming them.
"""

import pytest
import torch
import torch.nn.functional as F

from bertcourse.bert import NextSentencePred, Pooler
from bertcourse.data import IS_NEXT, NOT_NEXT, generate_corpus, make_nsp_pair, truncate_pair
from bertcourse.pretrain import nsp_loss
from bertcourse.exercises import ch06
from bertcourse.exercises.ch06 import q1, q1_pairs, q2, q3, q4, q5
from bertcourse.data import draw_rng as pair_rng
from test_exercises import assert_fails_with, assert_leaves_global_rng_alone, assert_passes_with

EXERCISES = [q1, q2, q3, q4]


# --- references and solutions pass -------------------------------------------------------

def test_reference_implementations_pass_their_own_check():
    assert q1.check(ch06._ref_pair_labels())
    assert q2.check(ch06._ref_truncate)
    assert q3.check(ch06._ref_head)
    assert q4.check(ch06._ref_nsp)


def test_q1_pairs_and_labels_come_from_make_nsp_pair():
    paragraphs = generate_corpus(0).train
    pairs, labels = q1_pairs(), ch06._ref_pair_labels()
    assert len(pairs) == len(labels) == 6
    assert labels.count(IS_NEXT) == 3 and labels.count(NOT_NEXT) == 3
    consecutive = {(p[i], p[i + 1]) for p in paragraphs for i in range(len(p) - 1)}
    for d, (a, b), label in zip(ch06.Q1_DRAWS, pairs, labels):
        rng = pair_rng(ch06.Q1_SEED, d)                 # replay the draw by hand
        j = rng.randrange(len(paragraphs))
        i = rng.randrange(len(paragraphs[j]) - 1)
        assert make_nsp_pair(paragraphs[j], i, paragraphs, rng) == (a, b, label)
        if label == IS_NEXT:
            assert (a, b) in consecutive
        else:
            assert b != paragraphs[j][i + 1]


def test_q2_to_q4_references_are_the_package():
    a, b, max_len = ch06.Q2_CASES[0][1]
    assert ch06._ref_truncate(a, b, max_len) == truncate_pair(a, b, max_len)
    encoded, pool_w, pool_b, cls_w, cls_b = ch06.Q3_CASES[0][1]
    by_hand = torch.tanh(encoded[:, 0] @ pool_w.T + pool_b) @ cls_w.T + cls_b
    torch.testing.assert_close(ch06._ref_head(encoded, pool_w, pool_b, cls_w, cls_b), by_hand)
    assert isinstance(Pooler(4), torch.nn.Module) and isinstance(NextSentencePred(4), torch.nn.Module)
    logits, labels = ch06.Q4_CASES[0][1]
    assert torch.equal(ch06._ref_nsp(logits, labels), nsp_loss(logits, labels))


def test_cases_include_edge_cases():
    descriptions = " | ".join(d for d, _ in ch06.Q2_CASES)
    assert "equally long" in descriptions and "max_len 3" in descriptions and "B is empty" in descriptions
    assert any(args[0].shape[1] == 1 for _, args in ch06.Q3_CASES)          # only [CLS]
    assert any(args[0].shape[0] == 1 for _, args in ch06.Q4_CASES)


# --- typical mistakes get a message naming them ------------------------------------------

def test_q1_mistakes():
    right = ch06._ref_pair_labels()
    assert_fails_with(q1, [1 - x for x in right], "flipped", "0 = IsNext")
    assert_fails_with(q1, ["NotNext"] + ["IsNext"] * 5, "string 'NotNext'", "0 for IsNext")
    assert_fails_with(q1, [True] * 6, "label 0 is True")
    assert_fails_with(q1, right[:5], "must hold 6 labels")
    assert_fails_with(q1, "101101", "must be a list of 6 labels")
    one_wrong = list(right)
    one_wrong[2] = 1 - one_wrong[2]
    assert_fails_with(q1, one_wrong, "1 of 6 labels are wrong, the first is pair 2")
    assert q1.check(torch.tensor(right))


# Q2's mistakes, each written another way than the package's diagnoses (slices, not pops)
def _fit(a, b, budget, cut_a):
    """Shorten the pair to `budget` tokens in all, one token at a time; cut_a(a, b) says
    whether A loses the next one."""
    while len(a) + len(b) > budget:
        a, b = (a[:-1], b) if cut_a(a, b) else (a, b[:-1])
    return a, b


def q2_from_front(tokens_a, tokens_b, max_len):
    """fails: removed tokens from the front"""
    a, b = list(tokens_a), list(tokens_b)
    while len(a) + len(b) + 3 > max_len:
        a, b = (a[1:], b) if len(a) > len(b) else (a, b[1:])
    return a, b


def q2_no_specials(tokens_a, tokens_b, max_len):
    """fails: counts [CLS] and the two [SEP]"""
    return _fit(list(tokens_a), list(tokens_b), max_len, lambda a, b: len(a) > len(b))


def q2_ties_to_a(tokens_a, tokens_b, max_len):
    """fails: equally long, B loses"""
    return _fit(list(tokens_a), list(tokens_b), max_len - 3, lambda a, b: len(a) >= len(b))


def q2_in_place(tokens_a, tokens_b, max_len):
    """fails: you changed the lists you were given"""
    while len(tokens_a) + len(tokens_b) + 3 > max_len:
        del (tokens_a if len(tokens_a) > len(tokens_b) else tokens_b)[-1]
    return tokens_a, tokens_b


def q2_a_first(tokens_a, tokens_b, max_len):
    """fails: cut the longer sentence"""
    return _fit(list(tokens_a), list(tokens_b), max_len - 3, lambda a, b: len(a) > 0)


def q2_one_list(tokens_a, tokens_b, max_len):
    """fails: return a pair"""
    return list(tokens_a) + list(tokens_b)


def test_q3_mistakes():
    assert_fails_with(q3, lambda e, pw, pb, cw, cb: torch.tanh(e.mean(1) @ pw.T + pb) @ cw.T + cb,
                      "only the [CLS] state")
    assert_fails_with(q3, lambda e, pw, pb, cw, cb: torch.tanh(e[:, -1] @ pw.T + pb) @ cw.T + cb, "FIRST token")
    assert_fails_with(q3, lambda e, pw, pb, cw, cb: (e[:, 0] @ pw.T + pb) @ cw.T + cb, "dense + tanh")
    assert_fails_with(q3, lambda e, pw, pb, cw, cb: torch.tanh(e[:, 0] @ pw + pb) @ cw.T + cb, "without .T")
    assert_fails_with(q3, lambda e, pw, pb, cw, cb: e[:, 0] @ cw.T + cb, "skipped the pooler")
    assert_fails_with(q3, lambda e, pw, pb, cw, cb: torch.softmax(torch.tanh(e[:, 0] @ pw.T + pb) @ cw.T + cb, -1),
                      "you returned probabilities")
    assert_fails_with(q3, lambda e, pw, pb, cw, cb: torch.tanh(e.flatten(1) @ pw.T + pb) @ cw.T + cb,
                      "you flattened the whole sequence into the pooler")
    assert_fails_with(q3, lambda e, pw, pb, cw, cb: torch.tanh(e[:, 0] @ pw.T + pb) @ cw + cb, "multiply by cls_w.T")
    assert_fails_with(q3, lambda e, pw, pb, cw, cb: torch.tanh(e.flatten(1)[:, :e.shape[-1]] @ pw.T + pb) @ cw.T,
                      "first difference")


def test_q4_mistakes():
    assert_fails_with(q4, lambda lo, la: -torch.log_softmax(lo, -1)[torch.arange(len(la)), 1 - la].mean(),
                      "labels are flipped")
    assert_fails_with(q4, lambda lo, la: -torch.log_softmax(lo, -1)[torch.arange(len(la)), la].sum(), "take the mean")
    assert_fails_with(q4, lambda lo, la: -lo[torch.arange(len(la)), la].mean(), "log_softmax(logits)")
    assert_fails_with(q4, lambda lo, la: (1 - torch.softmax(lo, -1)[torch.arange(len(la)), la]).mean(),
                      "not 1 - p(label)")
    assert q4.check(lambda lo, la: float(-torch.log_softmax(lo, -1)[torch.arange(len(la)), la].mean()))  # a float is fine


# Q4's shape and dtype slips, written as a learner writes them: the check names each, with the case's sizes
Q4_GOT = ("the shapes or dtypes in your code do not fit together. Your function got logits: shape (6, 2), float32; "
          "labels: shape (6,), int64. It must return a single number, a tensor of shape (), float32.")


def q4_float_labels(logits, labels):
    """fails: .float() makes them unusable as an index"""
    log_p = torch.log_softmax(logits, dim=-1)
    return -log_p[torch.arange(len(labels)), labels.float()].mean()


def q4_float_labels_gather(logits, labels):
    """fails: the labels are class ids that pick a column, so they must stay whole numbers"""
    log_p = torch.log_softmax(logits, dim=-1)
    return -log_p.gather(1, labels.float().unsqueeze(1)).mean()


def q4_gather_flat_labels(logits, labels):
    """fails: so make it a column, labels[:, None], (6, 1)"""
    return -torch.log_softmax(logits, dim=-1).gather(1, labels).mean()


def q4_rows_of_classes(logits, labels):
    """fails: torch.arange(2) counts the two classes"""
    return -torch.log_softmax(logits, dim=-1)[range(2), labels].mean()


def q4_labels_as_one_hot(logits, labels):
    """fails: not a one-hot (batch, 2) table"""
    return -(torch.log_softmax(logits, dim=-1) * labels).sum(dim=1).mean()


def q4_transposed(logits, labels):
    """fails: no transpose"""
    log_p = torch.log_softmax(logits.T, dim=-1)
    return -log_p[torch.arange(len(labels)), labels].mean()


def q4_swapped_indices(logits, labels):
    """fails: you swapped the two indices"""
    return -torch.log_softmax(logits, dim=-1)[labels, torch.arange(len(labels))].mean()


def q4_no_dim(logits, labels):
    """fails: torch.log_softmax needs the axis of the classes: dim=-1"""
    return -torch.log_softmax(logits)[torch.arange(len(labels)), labels].mean()


@pytest.mark.parametrize("wrong, phrases", [
    (q4_float_labels, [Q4_GOT, "IndexError: tensors used as indices must be long", "labels is int64"]),
    (q4_float_labels_gather, [Q4_GOT, "Expected dtype int32/int64 for index", "labels is int64"]),
    (q4_gather_flat_labels, [Q4_GOT, "Index tensor must have the same number of dimensions", "(batch, 2) = (6, 2)",
                             "labels is (batch,) = (6,)"]),
    (q4_rows_of_classes, [Q4_GOT, "with shapes [2], [6]", "torch.arange(batch) = torch.arange(6)"]),
    (q4_labels_as_one_hot, [Q4_GOT, "labels is (batch,) = (6,), one class id per pair",
                            "F.one_hot(labels, num_classes=2)"]),
    (q4_transposed, [Q4_GOT, "logits is already (batch, 2) = (6, 2)"]),
    (q4_swapped_indices, [Q4_GOT, "the rows are the 6 pairs and the columns the 2 classes"]),
    (q4_no_dim, ['TypeError: log_softmax() missing 1 required positional arguments: "dim"',
                 "(logits is (batch, 2) = (6, 2))"]),
])
def test_q4_shape_and_dtype_slips_are_named_with_the_sizes(wrong, phrases):
    assert_fails_with(q4, wrong, *phrases, " — ")


def q4_column_of_rows(logits, labels):
    """fails: every pair's log-probabilities with every pair's label"""
    # chapter 5's gather, a (batch, 1) column of rows, against the (batch,) labels
    rows = torch.arange(len(labels))[:, None]
    return -torch.log_softmax(logits, dim=-1)[rows, labels].mean()


def q4_all_rows_label_columns(logits, labels):
    """fails: your picks form a (batch, batch) = (6, 6) table"""
    return -torch.log_softmax(logits, dim=-1)[:, labels].mean()


def q4_rows_by_label(logits, labels):
    """fails: log_p[labels] picks whole rows"""
    return -torch.log_softmax(logits, dim=-1)[labels].mean()


def q4_gather_rows(logits, labels):
    """fails: gather(0, ...) picks along axis 0, the pairs"""
    return -torch.log_softmax(logits, dim=-1).gather(0, labels.unsqueeze(1)).mean()


def q4_softmax_over_batch(logits, labels):
    """fails: your log_softmax normalised over axis 0, the pairs of the batch"""
    return -torch.log_softmax(logits, dim=0)[torch.arange(len(labels)), labels].mean()


def q4_one_hot_without_classes(logits, labels):
    """fails: F.one_hot(labels, num_classes=2)"""
    return -(F.one_hot(labels) * torch.log_softmax(logits, dim=-1)).sum(dim=1).mean()


def q4_loss_per_pair(logits, labels):
    """fails: you returned one loss per pair, (batch,) = (6,)"""
    return -torch.log_softmax(logits, dim=-1)[torch.arange(len(labels)), labels]


def test_q4_near_misses_get_a_nudge_with_the_numbers():
    result = assert_fails_with(q4, q4_column_of_rows, "first difference at index ()", " — your picks form")
    assert "log_p[torch.arange(batch), labels]" in result.message
    assert_fails_with(q4, q4_one_hot_without_classes, "on all IsNext", "gets a single column")
    assert_fails_with(q4, q4_loss_per_pair, "expected shape (), got (6,) — you returned one loss per pair")
    for wrong in (q4_all_rows_label_columns, q4_rows_by_label, q4_gather_rows, q4_softmax_over_batch):
        assert_fails_with(q4, wrong, "first difference", " — " + wrong.__doc__.removeprefix("fails: "))


def test_hints_and_solutions_exist():
    for ex in EXERCISES:
        assert len(ex.hints) >= 2 and ex.var in ex.solution()


# --- Q5: predict where the NSP gradient reaches ---------------------------------------------

def test_q5_experiment_reaches_every_real_token_and_no_padding():
    result = ch06.nsp_gradient_positions()
    assert result["positions"] == 32 and result["real tokens"] == 21
    assert result["per layer"] == [21, 21, 1]          # embeddings, block 1, block 2 (the last)
    result["per layer"].append(0)                       # a copy: the cached result is safe
    assert ch06.nsp_gradient_positions()["per layer"] == [21, 21, 1]


def test_q5_experiment_leaves_the_global_rng_alone():
    assert_leaves_global_rng_alone(ch06.nsp_gradient_positions, ch06._nsp_gradient_positions)


def test_q5_right_prediction_passes():
    for answer in ({"last layer": 1, "embeddings": 21}, {"embeddings": 21.0, "last layer": torch.tensor(1)}):
        assert_passes_with(q5, answer, "no padding")


@pytest.mark.parametrize("answer, phrases", [
    ({"last layer": 1, "embeddings": 32}, ["'embeddings': 32 is too many", "padding"]),
    ({"last layer": 1, "embeddings": 1}, ["'embeddings': 1 is too few", "attention carries"]),
    ({"last layer": 21, "embeddings": 21}, ["'last layer': 21 is too many", "X[:, 0]"]),
    ({"last layer": 0, "embeddings": 0}, ["'last layer': 0 is too few", "'embeddings': 0 is too few"]),
])
def test_q5_wrong_predictions_explain(answer, phrases):
    assert_fails_with(q5, answer, *phrases)


@pytest.mark.parametrize("bad, phrase", [
    (21, "must be a dict with the keys ['last layer', 'embeddings']"), ({"embeddings": 21}, "must be a dict"),
    ({"last layer": ..., "embeddings": 21}, "is still ..."), ({"last layer": "1", "embeddings": 21}, "whole number"),
    ({"last layer": 1.5, "embeddings": 21}, "whole number"), ({"last layer": 1, "embeddings": 33}, "from 0 to 32"),
])
def test_q5_refuses_malformed_predictions(bad, phrase):
    assert_fails_with(q5, bad, phrase)


def test_q2_and_q4_refuse_the_package_functions_their_text_forbids():
    result = q2.check(lambda a, b, max_len: truncate_pair(list(a), list(b), max_len))
    assert result.status == "fail" and "without truncate_pair" in result.message
    for cheat in (lambda logits, labels: F.cross_entropy(logits, labels), lambda logits, labels: nsp_loss(logits, labels)):
        result = q4.check(cheat)
        assert result.status == "fail" and "and your code called it" in result.message, result.message
