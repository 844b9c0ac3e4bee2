"""Tests for the chapter 9 exercises (bertcourse.exercises.ch09).

The wrong answers are written the way a learner would write them, so the tests check that
real mistakes get a message naming them."""
import copy

import pytest
import torch

from bertcourse.exercises import ch09
from bertcourse.exercises.ch09 import q2, q3, q4, q1
from bertcourse.finetuning_baselines import bag_of_words, few_shot_accuracies, words
from bertcourse.training import lr_factor


# --- Q2: the schedule ------------------------------------------------------------------

def good_lr(step, steps, warmup_steps, peak):
    warm = 1.0 if warmup_steps == 0 else min(1.0, (step + 1) / warmup_steps)
    return peak * warm * (1 - step / steps)


def test_q2_reference_is_the_trainers_schedule():
    assert q2.check(good_lr)
    for step, steps, warmup, peak in ch09.Q2_CASES:
        assert good_lr(step, steps, warmup, peak) == pytest.approx(peak * lr_factor(step, step / steps, warmup))


@pytest.mark.parametrize("wrong, words_in_message", [
    (lambda step, steps, warmup_steps, peak: peak * (1 - step / steps), "left out the warm-up"),
    (lambda step, steps, warmup_steps, peak: peak * min(1.0, step / warmup_steps) * (1 - step / steps)
     if warmup_steps else peak * (1 - step / steps), "your warm-up starts at 0"),
    (lambda step, steps, warmup_steps, peak: peak * (min(1.0, (step + 1) / warmup_steps) if warmup_steps else 1.0),
     "left out the decay"),
    (lambda step, steps, warmup_steps, peak: peak * step / warmup_steps if step < warmup_steps
     else peak * (steps - step) / (steps - warmup_steps), "get_linear_schedule_with_warmup"),
    # the same with the course's (step + 1) ramp, as a learner who read section 4 would write it
    (lambda step, steps, warmup_steps, peak: peak * (step + 1) / warmup_steps if step < warmup_steps
     else peak * (steps - step) / (steps - warmup_steps), "decay that starts only after it"),
    (lambda step, steps, warmup_steps, peak: peak * min(min(1.0, (step + 1) / warmup_steps) if warmup_steps else 1.0,
                                                         1 - step / steps), "the smaller of the two factors"),
])
def test_q2_names_typical_mistakes(wrong, words_in_message):
    result = q2.check(wrong)
    assert result.status == "fail" and words_in_message in result.message, result.message


def test_q2_cases_cover_the_edges():
    steps = {(s, T, W) for s, T, W, _ in ch09.Q2_CASES}
    assert (0, 75, 8) in steps and (7, 75, 8) in steps and (74, 75, 8) in steps and any(W == 0 for _, _, W in steps)


# --- Q3: bag of words --------------------------------------------------------------------

def test_q3_reference_passes():
    assert q3.check(bag_of_words)


# Q3's mistakes, written another way than the package's diagnoses
def q3_counts(texts, vocab):
    """fails: you counted how often"""
    rows = [[float(words(text).count(w)) for w in sorted(vocab, key=vocab.get)] for text in texts]
    return torch.tensor(rows).reshape(len(texts), len(vocab))


def q3_split_on_spaces(texts, vocab):
    """fails: you split on spaces"""
    X = torch.zeros(len(texts), len(vocab))
    for r, text in enumerate(texts):
        X[r, [vocab[w] for w in set(text.split()) if w in vocab]] = 1.0
    return X


# --- Q4: evaluation ------------------------------------------------------------------------

def accuracy_loop(model, loader):
    correct = total = 0
    for b in loader:
        correct += int((model(b["tokens"], valid_lens=b["mask"]).argmax(-1) == b["labels"]).sum())
        total += len(b["labels"])
    return correct / total


def q4_mean_of_batch_accuracies(model, loader):
    """fails: you averaged the accuracies of the batches"""
    was = model.training
    model.eval()
    with torch.no_grad():
        accs = [(model(b["tokens"], valid_lens=b["mask"]).argmax(-1) == b["labels"]).float().mean() for b in loader]
    model.train(was)
    return float(torch.stack(accs).mean())


def test_q4_cases_tell_a_mean_of_batch_accuracies_from_the_accuracy():
    """Every case with more than one batch has a smaller last batch, and there the mean of the
    batches' accuracies is not the accuracy (else that mistake could pass)."""
    multi = [(model, loader) for _, (model, loader) in ch09.Q4_CASES if len(loader) > 1]
    assert len(multi) == 2
    for model, loader in multi:
        sizes = [len(b["labels"]) for b in loader]
        assert sizes[-1] < sizes[0], sizes
        model = copy.deepcopy(model).eval()
        with torch.no_grad():
            accuracy = accuracy_loop(model, loader)
        assert abs(q4_mean_of_batch_accuracies(model, loader) - accuracy) > 0.01


def test_q4_names_each_missing_part():
    def no_eval(model, loader):
        with torch.no_grad():
            return accuracy_loop(model, loader)

    def no_grad_missing(model, loader):
        was = model.training
        model.eval()
        out = accuracy_loop(model, loader)
        model.train(was)
        return out

    def not_restored(model, loader):
        model.eval()
        with torch.no_grad():
            return accuracy_loop(model, loader)

    def always_train_afterwards(model, loader):
        model.eval()
        with torch.no_grad():
            out = accuracy_loop(model, loader)
        model.train()
        return out

    assert "ran in training mode" in q4.check(no_eval).message
    assert '(the pitfall "evaluating with dropout on")' in q4.check(no_eval).message
    assert "gradients were on" in q4.check(no_grad_missing).message
    for wrong in (not_restored, always_train_afterwards):
        result = q4.check(wrong)
        assert result.status == "fail" and "model.train(was_training)" in result.message, result.message


def test_q4_wrong_accuracy_is_reported():
    def counts_batches(model, loader):
        was = model.training
        model.eval()
        with torch.no_grad():
            out = sum(float((model(b["tokens"], valid_lens=b["mask"]).argmax(-1) == b["labels"]).float().mean())
                      for b in loader)
        model.train(was)
        return out                                # a sum of batch means, not an accuracy

    result = q4.check(counts_batches)
    assert result.status == "fail" and "expected accuracy" in result.message


def test_q4_a_mask_passed_by_position_is_named_not_a_raw_error():
    def mask_by_position(model, loader):
        was = model.training
        model.eval()
        correct = total = 0
        with torch.no_grad():
            for b in loader:
                correct += int((model(b["tokens"], b["mask"]).argmax(-1) == b["labels"]).sum())
                total += len(b["labels"])
        model.train(was)
        return correct / total

    result = q4.check(mask_by_position)
    assert result.status == "fail" and "second positional argument" in result.message, result.message
    assert "valid_lens=b[\"mask\"]" in result.message and "forward()" not in result.message


# --- Q1: the prediction -----------------------------------------------------------------------

@pytest.fixture(scope="module")
def measured():
    return few_shot_accuracies(ch09.Q1_SIZE)


def test_q1_measured_values_tell_the_chapters_story(measured):
    assert measured["probe"] > measured["bag of words"] + 0.1
    assert 0.75 <= measured["probe"] <= 0.9 and 0.5 <= measured["bag of words"] <= 0.7


def test_q1_passes_close_predictions_and_explains_far_ones(measured):
    assert q1.check({"bag of words": measured["bag of words"] + 0.05, "probe": measured["probe"] - 0.05})
    result = q1.check({"bag of words": 0.5, "probe": 0.55})
    assert result.status == "fail" and "the probe only fits one linear layer" in result.message
    result = q1.check({"bag of words": 0.95, "probe": measured["probe"]})
    assert result.status == "fail" and "only knows the words of its 100 sentences" in result.message
    assert "measured" in result.message


def test_q1_a_guess_of_no_advantage_fails_even_within_the_tolerance(measured):
    # 0.71 and 0.73 (measured 0.62 and 0.82): each within 0.10, and almost no gap
    near = {"bag of words": measured["bag of words"] + 0.09, "probe": measured["probe"] - 0.09}
    result = q1.check(near)
    assert result.status == "fail" and "the gap is the point" in result.message.lower(), result.message
    half = (measured["probe"] - measured["bag of words"]) / 2
    assert q1.check({"bag of words": measured["bag of words"] + 0.04, "probe": measured["bag of words"] + 0.04
                     + half + 0.01})                                   # a smaller gap, but over half: passes


@pytest.mark.parametrize("bad, words_in_message", [
    ({"probe": 0.8}, "must be a dict with the keys"),
    ({"bag of words": "high", "probe": 0.8}, "must be a test accuracy"),
    ({"bag of words": ..., "probe": 0.8}, "is still ...: write your guess"),
    ({"bag of words": 80, "probe": 0.8}, "between 0 and 1"),
])
def test_q1_refuses_malformed_predictions(bad, words_in_message):
    result = q1.check(bad)
    assert result.status == "fail" and words_in_message in result.message, result.message


def test_the_mistakes_a_learner_review_found_are_named():
    from bertcourse.finetuning_baselines import words as split_words

    def lr_divides_by_zero(step, steps, warmup_steps, peak):
        return peak * min(1, (step + 1) / warmup_steps) * (1 - step / steps)

    assert "divided by warmup_steps = 0" in q2.check(lr_divides_by_zero).message

    def bow_no_membership(texts, vocab):
        X = torch.zeros(len(texts), len(vocab))
        for r, t in enumerate(texts):
            for w in split_words(t):
                X[r, vocab[w]] = 1
        return X

    def bow_lower_split(texts, vocab):
        X = torch.zeros(len(texts), len(vocab))
        for r, t in enumerate(texts):
            for w in t.lower().split():
                if w in vocab:
                    X[r, vocab[w]] = 1
        return X

    assert "skip them (if w in vocab)" in q3.check(bow_no_membership).message
    assert "punctuation then stays on the words" in q3.check(bow_lower_split).message

    def accuracy_as_a_float32_tensor(model, loader):          # right: a float32 division, then .item()
        was = model.training
        model.eval()
        correct, n = torch.tensor(0.0), 0
        with torch.no_grad():
            for b in loader:
                correct += (model(b["tokens"], valid_lens=b["mask"]).argmax(-1) == b["labels"]).sum()
                n += len(b["labels"])
        model.train(was)
        return (correct / n).item()

    def batches_unpacked(model, loader):
        model.eval()
        with torch.no_grad():
            return sum(int((model(t, valid_lens=m).argmax(-1) == y).sum()) for t, m, y in loader)

    assert q4.check(accuracy_as_a_float32_tensor).status == "pass"
    assert "each batch is a dict" in q4.check(batches_unpacked).message
