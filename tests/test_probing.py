"""Tests of chapter 9's baselines (bertcourse.probing): bag of words, logistic regression in
plain torch, and frozen sentence features of the real MiniLM."""
from __future__ import annotations

import pytest
import torch

from bertcourse.finetune import build_classifier, init_head_from_probe
from bertcourse.hf_weights import load_pretrained, mean_pool
from bertcourse.probing import (LogisticRegression, bag_of_words, build_vocabulary, fit_logistic_regression,
                                select_weight_decay, sentence_features, words)


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

def test_sentence_features_match_mean_pooling_and_the_pooler(minilm):
    texts = ["Great phone!", "The screen cracked after a week.", "Meh."]
    mean, cls = sentence_features(minilm.model, minilm.tokenizer, texts, pooling="both", batch_size=2)
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
