"""Headless tests of chapter 13's memory widget (bertcourse.widgets.memory): set the controls'
values, check the state against direct measurements and counts, and the figure's data."""
from __future__ import annotations

import matplotlib
import pytest
import torch

matplotlib.use("Agg")

from bertcourse.bert import BERTConfig  # noqa: E402
from bertcourse.finetune import BERTClassifier, ClassifierConfig, classification_step  # noqa: E402
from bertcourse.memory import saved_for_backward  # noqa: E402
from bertcourse.widgets.memory import MB, PARTS, MemoryBudget, draw_step_memory, step_memory  # noqa: E402


@pytest.fixture(scope="module")
def clf():
    torch.manual_seed(0)
    cfg = BERTConfig(vocab_size=300, num_hiddens=16, ffn_num_hiddens=32, num_heads=2, num_blks=2, max_len=512)
    return BERTClassifier(ClassifierConfig(cfg, pooling="mean"))


def _kept_mb(clf, b, s, checkpointing):
    batch = {"tokens": torch.ones(b, s, dtype=torch.long), "mask": torch.ones(b, s, dtype=torch.bool),
             "labels": torch.zeros(b, dtype=torch.long)}
    was, clf.encoder.checkpointing = clf.encoder.checkpointing, checkpointing
    try:
        return saved_for_backward(clf, classification_step, batch) / MB
    finally:
        clf.encoder.checkpointing = was


def test_the_widget_adds_up_what_a_step_holds(clf):
    w = MemoryBudget(clf, batch_size=4, seq_len=32)
    n = sum(p.numel() for p in clf.parameters())
    table = clf.encoder.token_embedding.weight.numel()
    s = w.state
    assert s["weights"] == s["gradients"] == n * 4 / MB and s["moments"] == 2 * n * 4 / MB
    assert s["activations"] == _kept_mb(clf, 4, 32, False)          # the formula = a direct measurement
    assert s["total"] == pytest.approx(sum(s[p] for p in PARTS)) and 0 < s["attention_share"] < 1
    w.train_word_embeddings.value = False                               # no gradient, no moments for the table
    assert w.state["gradients"] == (n - table) * 4 / MB and w.state["moments"] == 2 * (n - table) * 4 / MB
    assert w.state["weights"] == n * 4 / MB
    w.checkpointing.value = True
    w.batch_size.value, w.seq_len.value = 16, 128
    assert w.state["activations"] == _kept_mb(clf, 16, 128, True) and w.state["attention_share"] == 0
    assert "of which the attention weights 0%" in w.info.value
    assert not clf.encoder.checkpointing                                 # left as it was


def test_longer_sentences_cost_more_than_proportionally_without_checkpointing(clf):
    w = MemoryBudget(clf, batch_size=1, seq_len=64)
    short = w.state["activations"]
    w.seq_len.value = 512
    assert w.state["activations"] > 8 * short                           # the attention weights: s**2
    w.checkpointing.value = True
    long_ck = w.state["activations"]
    w.seq_len.value = 64
    assert long_ck == pytest.approx(8 * w.state["activations"], rel=0.01)  # checkpointed: about linear in s


def test_the_figure_shows_the_four_parts_and_binders_line(clf):
    state = step_memory(clf, MemoryBudget(clf).formulas, 8, 64, False, True)
    fig = draw_step_memory(state)
    ax = fig.axes[0]
    assert [round(p.get_width(), 6) for p in ax.patches] == [round(state[p], 6) for p in PARTS]
    assert any(line.get_xdata()[0] == 1024 for line in ax.get_lines())
    assert "8 x 64 word pieces" in ax.get_title(loc="left")


def test_wrong_arguments_are_named(clf):
    with pytest.raises(ValueError, match="batch_size must be one of 1, 2, 4, 8, 16, 32, 64"):
        MemoryBudget(clf, batch_size=3)
    with pytest.raises(TypeError, match="model must be a BERTClassifier, got Linear"):
        MemoryBudget(torch.nn.Linear(2, 2))
    with pytest.raises(TypeError, match="formulas must be a dict"):
        step_memory(clf, {}, 1, 8, False, True)
    with pytest.raises(TypeError, match="checkpointing must be True or False"):
        step_memory(clf, MemoryBudget(clf).formulas, 1, 8, "no", True)
