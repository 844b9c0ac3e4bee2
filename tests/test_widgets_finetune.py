"""Headless tests of chapter 9's "why did it say that?" widget and figures: set the controls'
values, check the state and the figures' data."""
from __future__ import annotations

import pytest
import torch

from bertcourse.bert import BERTConfig
from bertcourse.data import train_wordpiece
from bertcourse.finetune import BERTClassifier, ClassifierConfig, predict_proba
from bertcourse.widgets.finetune import (TYPE_YOUR_OWN, WhyDidItSayThat, contribution_data, draw_comparison,
                                         draw_contributions, draw_learning_curves)


@pytest.fixture(scope="module")
def tokenizer(splits):
    return train_wordpiece([r.text for r in splits.train], vocab_size=400)


@pytest.fixture(scope="module")
def model(tokenizer):
    """A tiny classifier with a random head (marked as trained so that it may predict): about
    half of any set of sentences is misclassified, which is what the browser needs."""
    torch.manual_seed(0)
    cfg = BERTConfig(vocab_size=len(tokenizer), num_hiddens=32, ffn_num_hiddens=64, num_heads=2, num_blks=1,
                     max_len=128)
    clf = BERTClassifier(ClassifierConfig(cfg))
    with torch.no_grad():
        clf.head.weight.normal_(0.0, 1.0)
    clf.trained_steps += 1
    return clf.eval()


def test_contribution_data(model, tokenizer):
    d = contribution_data(model, tokenizer, "Great phone, bad battery.", true_label=1)
    n = len(d["pieces"])
    assert d["pieces"][0] == "great" and d["contributions"].shape == d["p_without"].shape == (n,)
    torch.testing.assert_close(d["contributions"], d["p"] - d["p_without"])
    assert d["prediction"] == int(d["p"] > 0.5) and d["correct"] == (d["prediction"] == 1)
    assert d["message"].startswith(f"P(positive) = {d['p']:.2f}")
    i = int(d["contributions"].argmax())
    if d["contributions"][i] > 0:
        assert d["top_positive"] == (d["pieces"][i], pytest.approx(float(d["contributions"][i])))
    empty = contribution_data(model, tokenizer, "")
    assert empty["pieces"] == [] and empty["message"] == "type a sentence" and empty["true_label"] is None


def test_draw_contributions(model, tokenizer):
    d = contribution_data(model, tokenizer, "Great phone, bad battery.")
    fig = draw_contributions(d, title="t")
    bars = fig.axes[0].patches
    assert len(bars) == len(d["pieces"])
    assert [round(b.get_width(), 6) for b in bars] == [round(float(c), 6) for c in d["contributions"]]
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert labels == d["pieces"]
    empty = draw_contributions(contribution_data(model, tokenizer, ""))
    assert "type a sentence" in empty.axes[0].texts[0].get_text()


def test_widget_typed_sentence_and_mistake_browser(model, tokenizer, splits):
    test = splits.test[:40]
    w = WhyDidItSayThat(model, tokenizer, test, text="Great phone!")
    probs = predict_proba(model, tokenizer, [r.text for r in test])[:, 1]
    wrong = [r for r, p in zip(test, probs) if int(p > 0.5) != r.label]
    assert len(w.mistakes) == len(wrong) > 0 and {r for r, _ in w.mistakes} == set(wrong)
    assert len(w.example.options) == len(w.mistakes) + 1
    assert w.state["text"] == "Great phone!" and w.state["example"] == TYPE_YOUR_OWN

    w.text.value = "The food was not good at all."
    assert w.state["text"] == "The food was not good at all." and w.state["pieces"][:2] == ["the", "food"]
    assert w.state["true_label"] is None and w.state["message"] in w.info.value

    w.example.value = 0
    review, p = w.mistakes[0]
    assert w.text.value == review.text and w.state["text"] == review.text
    assert w.state["true_label"] == review.label and w.state["correct"] is False
    assert abs(w.state["p"] - p) < 1e-4 and "WRONG" in w.state["message"]
    assert len(w.figure.axes[0].patches) == len(w.state["pieces"])

    w.text.value = "Something else entirely."          # typing your own leaves the browser
    assert w.example.value == TYPE_YOUR_OWN and w.state["true_label"] is None
    assert not model.training


def test_widget_refuses_a_module_that_is_not_a_classifier(tokenizer):
    with pytest.raises(TypeError, match="model must be a BERTClassifier"):
        WhyDidItSayThat(torch.nn.Linear(2, 2), tokenizer)


def test_comparison_and_learning_curve_figures():
    results = {"a": {"test accuracy": 0.8, "training time (s)": 3.0},
               "b": {"test accuracy": 0.9, "training time (s)": 40.0}}
    fig = draw_comparison(results)
    assert [round(p.get_width(), 6) for p in fig.axes[0].patches] == [0.8, 0.9]
    assert [round(p.get_width(), 6) for p in fig.axes[1].patches] == [3.0, 40.0]
    curves = {100: {"bag of words": 0.6, "probe": 0.82}, 2400: {"bag of words": 0.79, "probe": 0.89}}
    fig = draw_learning_curves(curves)
    lines = fig.axes[0].lines
    assert list(lines[0].get_xdata()) == [100, 2400] and list(lines[1].get_ydata()) == [0.82, 0.89]
    with pytest.raises(ValueError):
        draw_comparison({})
    with pytest.raises(ValueError):
        draw_learning_curves({})
