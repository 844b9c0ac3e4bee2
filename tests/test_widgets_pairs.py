"""Headless tests of chapter 10's inference explorer (bertcourse.widgets.pairs): the pure function
against predict_proba and the tokenizer, the figure's data, and the widget's state after its
controls change."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from matplotlib.colors import to_rgba

from bertcourse.bert import BERTConfig
from bertcourse.data import train_wordpiece
from bertcourse.finetune import BERTClassifier, ClassifierConfig, predict_proba
from bertcourse.sentence_pairs import LABELS, Pair, read_pairs
from bertcourse.widgets.pairs import (SEGMENT_COLOURS, TYPE_YOUR_OWN, InferenceExplorer, draw_inference,
                                      inference_data)

PREMISE, HYPOTHESIS = "A dog runs through the grass .", "An animal is moving ."


@pytest.fixture(scope="module")
def pairs():
    return read_pairs("dev")[:300]


@pytest.fixture(scope="module")
def tokenizer(pairs):
    return train_wordpiece([p.premise for p in pairs] + [p.hypothesis for p in pairs], vocab_size=400)


def tiny_classifier(tokenizer, num_classes: int = 3) -> BERTClassifier:
    """A tiny classifier with a random head, marked as trained so that it may predict."""
    torch.manual_seed(0)
    cfg = BERTConfig(vocab_size=len(tokenizer), num_hiddens=32, ffn_num_hiddens=64, num_heads=2, num_blks=1,
                     max_len=128)
    clf = BERTClassifier(ClassifierConfig(cfg, num_classes=num_classes))
    with torch.no_grad():
        clf.head.weight.normal_(0.0, 0.3)          # not saturated: the three probabilities all show
    clf.trained_steps += 1
    return clf.eval()


@pytest.fixture(scope="module")
def model(tokenizer):
    return tiny_classifier(tokenizer)


def probabilities(model, tokenizer, premise, hypothesis):
    """The oracle: predict_proba on one pair, as a float numpy array (3,)."""
    return predict_proba(model, tokenizer, [Pair(premise, hypothesis, 0)])[0].double().numpy()


# --- the pure function -----------------------------------------------------------------------

def test_inference_data_is_predict_proba_both_ways(model, tokenizer):
    d = inference_data(model, tokenizer, PREMISE, HYPOTHESIS)
    assert set(d) == {"labels", "pieces", "segments", "p", "p_swapped", "prediction", "prediction_swapped",
                      "changed", "message"}
    assert d["labels"] == LABELS
    for key, (a, b) in (("p", (PREMISE, HYPOTHESIS)), ("p_swapped", (HYPOTHESIS, PREMISE))):
        p = d[key]
        assert isinstance(p, np.ndarray) and p.shape == (3,) and p.dtype.kind == "f"
        assert p.sum() == pytest.approx(1.0, abs=1e-6) and (p > 0).all()
        np.testing.assert_allclose(p, probabilities(model, tokenizer, a, b), atol=1e-6)
    assert not np.allclose(d["p"], d["p_swapped"], atol=1e-4)    # the order reaches the model
    assert d["prediction"] == LABELS[int(d["p"].argmax())]
    assert d["prediction_swapped"] == LABELS[int(d["p_swapped"].argmax())]
    assert d["changed"] == (d["prediction"] != d["prediction_swapped"])
    assert d["message"].startswith(f"{d['prediction']} ({d['p'].max():.2f}) → swapped: "
                                   f"{d['prediction_swapped']} ({d['p_swapped'].max():.2f})")


def test_pieces_and_segments_are_the_model_input(model, tokenizer):
    d = inference_data(model, tokenizer, PREMISE, HYPOTHESIS)
    a, b = tokenizer.tokenize(PREMISE), tokenizer.tokenize(HYPOTHESIS)
    assert d["pieces"] == ["[CLS]", *a, "[SEP]", *b, "[SEP]"]
    first_sep = d["pieces"].index("[SEP]")
    assert first_sep == len(a) + 1
    assert d["segments"] == [0] * (first_sep + 1) + [1] * (len(d["pieces"]) - first_sep - 1)


def test_the_message_says_why_a_changed_prediction_matters(model, tokenizer, pairs):
    both_ways = [Pair(p.premise, p.hypothesis, 0) for p in pairs] + [Pair(p.hypothesis, p.premise, 0) for p in pairs]
    labels = predict_proba(model, tokenizer, both_ways).argmax(-1).view(2, -1)
    flips = (labels[0] != labels[1]).tolist()
    assert True in flips and False in flips, "the tiny model should flip some pairs and keep others"
    for changed in (True, False):
        pair = pairs[flips.index(changed)]
        d = inference_data(model, tokenizer, pair.premise, pair.hypothesis)
        assert d["changed"] is changed and (d["prediction"] != d["prediction_swapped"]) is changed
        assert ("entailment is not symmetric" in d["message"]) is changed


def test_predictions_are_made_in_eval_mode(tokenizer):
    clf = tiny_classifier(tokenizer)
    clf.dropout.p = 0.5                                # in training mode every call would differ
    expected = inference_data(clf, tokenizer, PREMISE, HYPOTHESIS)["p"]
    clf.train()
    for _ in range(2):
        np.testing.assert_allclose(inference_data(clf, tokenizer, PREMISE, HYPOTHESIS)["p"], expected, atol=1e-6)
    assert clf.training                                # and the mode is given back


@pytest.mark.parametrize("premise, hypothesis", [("", HYPOTHESIS), (PREMISE, "   "), ("", "")])
def test_blank_input_asks_for_both_texts(model, tokenizer, premise, hypothesis):
    d = inference_data(model, tokenizer, premise, hypothesis)
    assert d["message"] == "type a premise and a hypothesis"
    assert d["p"] is d["p_swapped"] is d["prediction"] is d["prediction_swapped"] is None
    assert d["changed"] is False and d["pieces"][0] == "[CLS]"
    fig = draw_inference(d)
    assert "type a premise and a hypothesis" in fig.axes[0].texts[0].get_text()


def test_wrong_arguments_are_named(model, tokenizer):
    with pytest.raises(TypeError, match="premise must be a str"):
        inference_data(model, tokenizer, 3, HYPOTHESIS)
    with pytest.raises(TypeError, match="hypothesis must be a str"):
        inference_data(model, tokenizer, PREMISE, ["An animal"])
    with pytest.raises(TypeError, match="model must be a BERTClassifier"):
        inference_data(torch.nn.Linear(2, 3), tokenizer, PREMISE, HYPOTHESIS)
    with pytest.raises(TypeError, match="tokenizer must be"):
        inference_data(model, "bert-base-uncased", PREMISE, HYPOTHESIS)
    with pytest.raises(ValueError, match="num_classes=2"):
        inference_data(tiny_classifier(tokenizer, num_classes=2), tokenizer, PREMISE, HYPOTHESIS)
    with pytest.raises(TypeError, match="data must be the dict"):
        draw_inference([0.2, 0.3, 0.5])
    with pytest.raises(ValueError, match="data must have the keys"):
        draw_inference({"p": np.ones(3) / 3})
    with pytest.raises(TypeError, match="examples must be a list of Pair"):
        InferenceExplorer(model, tokenizer, ["A dog runs ."])
    with pytest.raises(TypeError, match="premise must be a str"):
        InferenceExplorer(model, tokenizer, [], premise=None)


# --- the figure ------------------------------------------------------------------------------

def test_draw_inference_bars_and_pieces(model, tokenizer):
    d = inference_data(model, tokenizer, PREMISE, HYPOTHESIS)
    fig = draw_inference(d)
    bars = fig.axes[1].patches
    assert len(bars) == 6
    np.testing.assert_allclose([b.get_width() for b in bars], [*d["p"], *d["p_swapped"]], atol=1e-9)
    for group, p in ((bars[:3], d["p"]), (bars[3:], d["p_swapped"])):
        best = int(np.argmax(p))
        assert [b.get_alpha() == 1.0 and b.get_linewidth() > 0 for b in group] == [k == best for k in range(3)]
    written = [t.get_text() for t in fig.axes[1].texts]
    assert [f"{v:.2f}" for v in [*d["p"], *d["p_swapped"]]] == [w for w in written if w[:1].isdigit()]
    boxes = [(t.get_text(), t.get_bbox_patch().get_facecolor()) for t in fig.axes[0].texts]
    assert [text for text, _ in boxes] == d["pieces"]
    assert [colour for _, colour in boxes] == [to_rgba(SEGMENT_COLOURS[s]) for s in d["segments"]]


# --- the widget ------------------------------------------------------------------------------

def test_widget_examples_text_boxes_and_swap(model, tokenizer, pairs):
    examples = pairs[:6]
    w = InferenceExplorer(model, tokenizer, examples)
    assert len(w.example.options) == len(examples) + 1
    assert w.state["example"] == TYPE_YOUR_OWN and w.state["gold_label"] is None
    assert (w.state["premise"], w.state["hypothesis"]) == (PREMISE, HYPOTHESIS)

    w.example.value = 2                                   # choosing an example fills both boxes
    ex = examples[2]
    assert (w.premise.value, w.hypothesis.value) == (ex.premise, ex.hypothesis)
    assert w.state["gold_label"] == LABELS[ex.label] and w.state["example"] == 2
    np.testing.assert_allclose(w.state["p"], probabilities(model, tokenizer, ex.premise, ex.hypothesis), atol=1e-6)
    assert w.state["message"] in w.info.value and LABELS[ex.label] in w.info.value

    w.hypothesis.value = "Nobody is outside ."            # editing a box leaves the example
    assert w.state["hypothesis"] == "Nobody is outside ." and w.state["premise"] == ex.premise
    assert w.state["pieces"][-3:] == [*tokenizer.tokenize("Nobody is outside .")[-2:], "[SEP]"]
    assert w.example.value == TYPE_YOUR_OWN and w.state["gold_label"] is None
    np.testing.assert_allclose(w.state["p"], probabilities(model, tokenizer, ex.premise, "Nobody is outside ."),
                               atol=1e-6)

    w.example.value = 4
    before = w.state
    computed = []
    compute = w.compute
    w.compute = lambda: computed.append(1) or compute()
    w.swap_button.click()
    assert len(computed) == 1                             # one redraw for the two boxes
    assert (w.premise.value, w.hypothesis.value) == (examples[4].hypothesis, examples[4].premise)
    np.testing.assert_allclose(w.state["p"], before["p_swapped"], atol=1e-6)
    np.testing.assert_allclose(w.state["p_swapped"], before["p"], atol=1e-6)
    assert w.state["gold_label"] is None and w.example.value == TYPE_YOUR_OWN   # the gold label was the pair's
    bars = w.figure.axes[1].patches
    assert len(bars) == 6 and bars[0].get_width() == pytest.approx(float(w.state["p"][0]))
    assert not model.training

    w.premise.value = " "
    assert w.state["p"] is None and "type a premise" in w.figure.axes[0].texts[0].get_text()
