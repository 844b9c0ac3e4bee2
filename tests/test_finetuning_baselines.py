"""Tests of chapter 9's baselines (bertcourse.finetuning_baselines): bag of words, logistic regression in
plain torch, and frozen sentence features of the real MiniLM."""
from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings, strategies as st

from bertcourse.finetune import build_classifier, init_head_from_probe
from bertcourse.bert import mean_pool
from bertcourse.inspection import sentence_vectors
from bertcourse.pretrained_bert import load_pretrained
from bertcourse.finetuning_baselines import (LogisticRegression, bag_of_words, build_vocabulary, fit_logistic_regression,
                                WEIGHT_DECAYS, select_weight_decay, words)


@pytest.fixture(scope="module")
def minilm():
    return load_pretrained("minilm")


def test_words_and_bag_of_words():
    assert words("Don't buy it!! 10/10") == ["don't", "buy", "it", "10", "10"]
    vocab = build_vocabulary(["good good phone", "bad phone", "good"], min_count=2)
    assert vocab == {"good": 0, "phone": 1}
    X = bag_of_words(["Good, good!", "a bad phone", ""], vocab)
    assert torch.equal(X, torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]]))
    with pytest.raises(TypeError, match="wrap a single text in a list"):
        bag_of_words("good", vocab)

def test_logistic_regression_fits_separable_data_and_weight_decay_is_chosen_on_validation():
    g = torch.Generator().manual_seed(0)
    X = torch.randn(200, 5, generator=g)
    y = (X[:, 0] + 0.5 * X[:, 1] > 0).long()
    model = fit_logistic_regression(X, y, weight_decay=1e-4)
    assert model.accuracy(X, y) == 1.0 and not model.training
    strong = fit_logistic_regression(X, y, weight_decay=10.0)
    assert strong.linear.weight.norm() < model.linear.weight.norm()
    best, wd, accs = select_weight_decay(X[:150], y[:150], X[150:], y[150:], grid=(1e-3, 1e2))
    assert set(accs) == {1e-3, 1e2} and accs[wd] == max(accs.values()) and isinstance(best, LogisticRegression)
    with pytest.raises(ValueError, match=r"y must have shape \(n=200,\)"):
        fit_logistic_regression(X, y[:10])
    with pytest.raises(ValueError, match=r"X must have shape \(n, num_features=5\), got shape \(3, 4\)"):
        model(torch.zeros(3, 4))
    with pytest.raises(ValueError, match="weight_decay must be >= 0, got -1"):
        fit_logistic_regression(X, y, weight_decay=-1)

def test_sentence_vectors_match_mean_pooling_and_the_pooler(minilm):
    texts = ["Great phone!", "The screen cracked after a week.", "Meh."]
    mean, cls = sentence_vectors(minilm.model, minilm.tokenizer, texts, pooling="both", batch_size=2)
    enc = minilm.encode(texts)
    with torch.no_grad():
        hidden = minilm.model.encoder(enc.tokens, enc.segments, enc.mask)
    torch.testing.assert_close(mean, mean_pool(hidden, enc.mask), atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(cls, minilm.model.pooler(hidden), atol=1e-5, rtol=1e-4)
    probe = LogisticRegression(384)
    clf, _ = build_classifier(minilm, seed=0)
    init_head_from_probe(clf, probe)
    assert torch.equal(clf.head.weight, probe.linear.weight)
    with pytest.raises(ValueError, match="probe has weight shape"):
        init_head_from_probe(clf, LogisticRegression(10))


# ---------------------------------------------------------------------------------------
# Wrong input: texts, vocabularies, features, labels, grids
# ---------------------------------------------------------------------------------------

NAN, INF = float("nan"), float("inf")


def test_texts_and_vocabularies_are_checked():
    with pytest.raises(TypeError, match=r"texts must be a non-empty list of strings, got str \('good phone'\): wrap"):
        build_vocabulary("good phone")                   # would have counted letters
    with pytest.raises(ValueError, match="no word of texts occurs min_count=3 times"):
        build_vocabulary(["good phone", "bad"], min_count=3)
    with pytest.raises(ValueError, match="texts must hold at least one"):
        bag_of_words([], {"good": 0})
    with pytest.raises(ValueError, match=r"vocab must hold ints in \[0, 1\], got values from 0 to 7"):
        bag_of_words(["good phone"], {"good": 0, "phone": 7})
    with pytest.raises(ValueError, match="vocab must hold at least one word"):
        bag_of_words(["good phone"], {})


def test_features_labels_and_grids_are_checked():
    X, y = torch.randn(6, 3), torch.tensor([0, 1, 0, 1, 0, 1])
    with pytest.raises(ValueError, match=r"y must hold class labels in 0..1 \(num_classes=2\), got values from 0 to 2"):
        fit_logistic_regression(X, y * 2)                # cross_entropy's IndexError, before
    with pytest.raises(ValueError, match=r"X must hold finite numbers \(no NaN or infinity\), got 1 of 18"):
        fit_logistic_regression(X.index_put((torch.tensor(2), torch.tensor(1)), torch.tensor(NAN)), y)
    with pytest.raises(ValueError, match="grid must hold at least one weight decay"):
        select_weight_decay(X, y, X, y, grid=())         # a TypeError on None, before
    with pytest.raises(ValueError, match=r"X_val must have shape \(n, num_features=3\), got shape \(6, 4\)"):
        select_weight_decay(X, y, torch.zeros(6, 4), y)
    with pytest.raises(ValueError, match=r"y must have shape \(n=6,\) of integer class labels \(1-D\), got shape \(6, 1\)"):
        LogisticRegression(3).accuracy(X, y[:, None])    # broadcast to (6, 6), before


WORDS = ["good", "bad", "phone", "not", "the", "don't"]


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.lists(st.lists(st.sampled_from(WORDS + ["other", "!", "GOOD", "Don't", "10/10", " "]), max_size=6)
                .map(" ".join), min_size=1, max_size=5))
def test_bag_of_words_marks_exactly_the_known_words_property(texts):
    vocab = {w: i for i, w in enumerate(WORDS)}
    X = bag_of_words(texts, vocab)
    assert X.shape == (len(texts), len(WORDS)) and set(X.unique().tolist()) <= {0.0, 1.0}
    for r, text in enumerate(texts):
        assert {WORDS[c] for c in X[r].nonzero().flatten().tolist()} == set(words(text)) & set(WORDS)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(n=st.integers(1, 8), d=st.integers(1, 5), num_classes=st.integers(2, 4), data=st.data())
def test_features_and_labels_are_checked_before_any_fit_property(n, d, num_classes, data):
    X = torch.randn(n, d, generator=torch.Generator().manual_seed(10 * n + d))
    y = torch.tensor(data.draw(st.lists(st.integers(0, num_classes - 1), min_size=n, max_size=n)))
    model = fit_logistic_regression(X, y, num_classes=num_classes, steps=5)       # valid: no complaint
    assert 0.0 <= model.accuracy(X, y) <= 1.0
    bad_X = X.clone()
    bad_X[data.draw(st.integers(0, n - 1)), data.draw(st.integers(0, d - 1))] = data.draw(st.sampled_from([NAN, INF, -INF]))
    for call, name in ((lambda: fit_logistic_regression(bad_X, y, num_classes=num_classes), "X"),
                       (lambda: model.accuracy(bad_X, y), "X"), (lambda: model(bad_X), "X"),
                       (lambda: select_weight_decay(bad_X, y, X, y, num_classes=num_classes), "X_train"),
                       (lambda: select_weight_decay(X, y, bad_X, y, num_classes=num_classes), "X_val")):
        with pytest.raises(ValueError, match=rf"^{name} must hold finite numbers"):
            call()
    bad_y = y.clone()
    bad_y[data.draw(st.integers(0, n - 1))] = data.draw(st.one_of(st.integers(-5, -1),
                                                                  st.integers(num_classes, num_classes + 5)))
    for call, name in ((lambda: fit_logistic_regression(X, bad_y, num_classes=num_classes), "y"),
                       (lambda: model.accuracy(X, bad_y), "y"),
                       (lambda: select_weight_decay(X, y, X, bad_y, num_classes=num_classes), "y_val")):
        with pytest.raises(ValueError, match=rf"^{name} must hold class labels in 0..{num_classes - 1}"):
            call()


@settings(max_examples=40, deadline=None, derandomize=True)
@given(st.lists(st.one_of(st.floats(0, 10), st.integers(0, 3), st.sampled_from([-1.0, -1e-9, -2, NAN, INF, -INF])),
                max_size=4))
def test_select_weight_decay_takes_a_non_empty_grid_of_weight_decays_property(grid):
    X = torch.randn(8, 3, generator=torch.Generator().manual_seed(0))
    y = (X[:, 0] > 0).long()
    wrong = next((i for i, wd in enumerate(grid) if not (math.isfinite(wd) and wd >= 0)), None)
    if not grid:
        with pytest.raises(ValueError, match="^grid must hold at least one weight decay"):
            select_weight_decay(X, y, X, y, grid=grid)
    elif wrong is not None:
        with pytest.raises(ValueError, match=rf"^grid\[{wrong}\] must be"):
            select_weight_decay(X, y, X, y, grid=grid)
    else:
        model, wd, accs = select_weight_decay(X, y, X, y, grid=grid, steps=5)
        assert wd in grid and set(accs) == set(grid) and accs[wd] == max(accs.values())


def test_ch09_the_bag_of_words_learns_sentiment_words_on_the_reviews():
    """Chapter 9, section 3a: fitted on the 2,400 training reviews, the bag of words' ten most
    positive words include *great*, and no word is among both the ten most positive and the ten
    most negative (the notebook asserts this too). Its features are 0/1, one row per sentence."""
    from bertcourse.finetuning_baselines import WEIGHT_DECAYS
    from bertcourse.reviews import load_sentiment
    splits = load_sentiment(seed=0)
    texts = {name: [r.text for r in part] for name, part in splits.items()}
    labels = {name: torch.tensor([r.label for r in part]) for name, part in splits.items()}
    vocab = build_vocabulary(texts["train"])
    X = {name: bag_of_words(texts[name], vocab) for name in ("train", "validation")}
    assert X["train"].shape == (2400, len(vocab)) and set(X["train"].unique().tolist()) == {0.0, 1.0}
    bow, _, _ = select_weight_decay(X["train"], labels["train"], X["validation"], labels["validation"], WEIGHT_DECAYS)
    top = bow.linear.weight[1] - bow.linear.weight[0]
    by_index = list(vocab)
    positive = [by_index[i] for i in top.topk(10).indices]
    negative = [by_index[i] for i in (-top).topk(10).indices]
    assert "great" in positive and not set(positive) & set(negative), (positive, negative)


def test_ch09_minilm_keeps_bert_base_uncased_special_ids(minilm):
    """Chapter 9, pitfall 5: in MiniLM's vocabulary (bert-base-uncased's) [PAD], [CLS], [SEP] and
    [MASK] are 0, 101, 102 and 103, which is why hard-coded ids work there by luck."""
    from bertcourse.reviews import special_ids
    assert [special_ids(minilm.tokenizer)[t] for t in ("[PAD]", "[CLS]", "[SEP]", "[MASK]")] == [0, 101, 102, 103]


def test_ch10_one_side_baselines_the_premise_alone_is_exactly_chance_on_validation():
    from bertcourse.finetuning_baselines import PAIR_SIDES, one_side_baselines
    from bertcourse.sentence_pairs import load_snli

    splits = load_snli(train_size=600, validation_size=90, test_size=300, seed=0)
    out = one_side_baselines(splits)
    assert set(out) == set(PAIR_SIDES)
    # every validation premise comes with one hypothesis of each label: one input, three answers
    assert abs(out["premise"]["validation"] - 1 / 3) < 1e-6
    model, vocab = out["hypothesis"]["model"], out["hypothesis"]["vocab"]
    X = bag_of_words([p.hypothesis for p in splits.test], vocab)
    y = torch.tensor([p.label for p in splits.test])
    assert out["hypothesis"]["test"] == model.accuracy(X, y)        # the test figure is that model's
    assert out["hypothesis"]["weight_decay"] in WEIGHT_DECAYS and set(vocab) <= {
        w for p in splits.train for w in words(p.hypothesis)}        # a vocabulary of the training side only
    assert one_side_baselines(splits)["hypothesis"]["model"] is model           # cached: fitted once
    from bertcourse import finetuning_baselines
    finetuning_baselines._one_side_fits.cache_clear()
    before = torch.random.get_rng_state()
    assert one_side_baselines(splits)["hypothesis"]["test"] == out["hypothesis"]["test"]
    assert torch.equal(before, torch.random.get_rng_state())                    # the notebook's draws stay its own
    with pytest.raises(TypeError, match="splits must be"):
        one_side_baselines([p for p in splits.train])
