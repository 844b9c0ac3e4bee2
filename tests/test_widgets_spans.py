"""Headless tests of chapter 12's answer-span explorer (bertcourse.widgets.spans): the pure function
against make_windows, a forward pass by hand, best_span, best_answer and predict_answers, with MiniLM's
real tokenizer and a tiny span head; the two heads taken alone, with a head whose logits are known;
the figure's data; and the widget's state after its controls change."""
from __future__ import annotations

import html
import itertools
import random

import numpy as np
import pytest
import torch
from matplotlib.colors import to_rgba

from bertcourse.answer_spans import Question, WindowDataset, best_answer, best_span, make_windows, span_text
from bertcourse import widgets
from bertcourse.bert import BERTConfig
from bertcourse.data import train_wordpiece
from bertcourse.pretrained_bert import load_pretrained
from bertcourse.task_heads import SpanPredictor, TokenTagger, predict_answers
from bertcourse.widgets.spans import (END_COLOUR, NEVER_COLOUR, START_COLOUR, TYPE_YOUR_OWN, SpanExplorer,
                                      draw_spans, span_data)

QUESTION = "Which river runs through London?"
PARAGRAPH = "The river Thames runs through London, the capital of England. London lies in the south of the country."
KEYS = {"question", "context", "windows", "start_logits", "end_logits", "start_probs", "end_probs", "answer",
        "candidates", "alone", "notes", "message"}
WORDS = "the river runs by town and hill near a lake where people fish in summer london england".split()


@pytest.fixture(scope="module")
def tokenizer():
    return load_pretrained("minilm").tokenizer


def config(vocab_size: int = 30522, max_len: int = 512, dropout: float = 0.1) -> BERTConfig:
    # max_len 512: MiniLM's tokenizer truncates at 512, and a model must have the positions for it
    return BERTConfig(vocab_size=vocab_size, num_hiddens=16, ffn_num_hiddens=32, num_heads=2, num_blks=1,
                      max_len=max_len, dropout=dropout)


def tiny_spans(vocab_size: int = 30522, max_len: int = 512, dropout: float = 0.1) -> SpanPredictor:
    """A tiny span head with random weights, large enough that its logits vary from piece to piece."""
    torch.manual_seed(0)
    model = SpanPredictor(config(vocab_size, max_len, dropout))
    with torch.no_grad():
        model.head.weight.normal_(0.0, 0.5)
    return model.eval()


@pytest.fixture(scope="module")
def model():
    return tiny_spans()


@pytest.fixture(scope="module")
def long_paragraph():
    """300 made-up words, one piece each, and 23 full stops: 323 pieces, four windows of up to 128."""
    rng = random.Random(0)
    return " ".join(rng.choice(WORDS) + ("." if i % 13 == 12 else "") for i in range(300))


class LookupSpans(SpanPredictor):
    """A span head whose logits depend on the piece alone (two tables, one entry per token id, 0 for
    pieces not named): its argmaxes and its answer are known in advance. The encoder is not run."""

    def __init__(self, tokenizer, starts: dict, ends: dict):
        super().__init__(config())
        for name, logits in (("start_table", starts), ("end_table", ends)):
            table = torch.zeros(30522)
            for piece, value in logits.items():
                table[tokenizer.token_to_id(piece)] = value
            self.register_buffer(name, table)

    def forward(self, tokens, *args, segments=None, valid_lens=None):
        return self.start_table[tokens], self.end_table[tokens]


def by_hand(model, window):
    """The window's start and end logits from a forward pass of the window alone (no padding)."""
    with torch.no_grad():
        s, e = model(torch.tensor([window.ids]), segments=torch.tensor([window.segments]))
    return s[0], e[0]


# --- the pure function -----------------------------------------------------------------------

def test_windows_logits_and_probabilities_are_the_models(model, tokenizer):
    d = span_data(model, tokenizer, QUESTION, PARAGRAPH)
    assert set(d) == KEYS and d["question"] == QUESTION and d["context"] == PARAGRAPH
    assert d["windows"] == make_windows(tokenizer, QUESTION, PARAGRAPH, 128, 32) and len(d["windows"]) == 1
    w = d["windows"][0]
    assert w.pieces[:3] == ("[CLS]", "which", "river") and w.pieces[w.context_start] == "the"
    s, e = by_hand(model, w)
    for name, logits in (("start", s), ("end", e)):
        got, p = d[f"{name}_logits"][0], d[f"{name}_probs"][0]
        assert isinstance(p, np.ndarray) and p.shape == (len(w),) and p.dtype == np.float64
        np.testing.assert_allclose(got, logits.double().numpy(), atol=1e-5)
        # each head's softmax over all the window's positions, [CLS] and the question included
        np.testing.assert_allclose(p, torch.softmax(logits.double(), 0).numpy(), atol=1e-6)
        np.testing.assert_allclose(p.sum(), 1.0, atol=1e-12)
        assert (p > 0).all()
    assert d["alone"] == [(int(d["start_probs"][0].argmax()), int(d["end_probs"][0].argmax()))]
    assert d["message"].startswith(f'answer: "{d["answer"].text}" (window 1 of 1, pieces ')


def test_candidates_are_every_valid_span_ranked_by_score(model, tokenizer):
    # 8 context pieces, fewer than best_span's n_best=20: every valid span is a candidate
    context = "London lies in the south of England."
    d = span_data(model, tokenizer, QUESTION, context, max_answer_len=3, top=100)
    w, s, e = d["windows"][0], d["start_logits"][0], d["end_logits"][0]
    positions = list(w.context_positions)
    assert len(positions) == 8
    valid = [(i, j) for i, j in itertools.product(positions, positions) if i <= j < i + 3]
    ranked = sorted(valid, key=lambda ij: (-(s[ij[0]] + e[ij[1]]), ij))
    assert [(c[0], c[1]) for c in d["candidates"][0]] == ranked and len(ranked) == 8 + 7 + 6
    for i, j, score, text in d["candidates"][0]:
        assert score == s[i] + e[j] and text == span_text(w, context, i, j)
    assert d["candidates"][0][0][:2] == (d["answer"].start, d["answer"].end)
    top3 = span_data(model, tokenizer, QUESTION, context, max_answer_len=3, top=3)["candidates"][0]
    assert top3 == d["candidates"][0][:3]


def test_the_answer_is_predict_answers_and_best_answer_and_candidates_obey_the_rules(model, tokenizer,
                                                                                     long_paragraph):
    settings = {"max_len": 48, "stride": 16, "max_answer_len": 8}
    d = span_data(model, tokenizer, "Where do people fish?", long_paragraph, top=4, **settings)
    windows = d["windows"]
    assert len(windows) > 5
    # the package's own prediction for the same question, through a WindowDataset of one Question
    question = Question("q1", "Where do people fish?", long_paragraph, ((long_paragraph[:3], 0),))
    data = WindowDataset([question], tokenizer, max_len=48, stride=16)
    assert predict_answers(model, data, max_answer_len=8) == {"q1": d["answer"].text}
    # ... and best_answer on each window's own forward pass, equal within float noise
    logits = [by_hand(model, w) for w in windows]
    for (s, e), got_s, got_e in zip(logits, d["start_logits"], d["end_logits"]):
        np.testing.assert_allclose(got_s, s.double().numpy(), atol=1e-5)
        np.testing.assert_allclose(got_e, e.double().numpy(), atol=1e-5)
    expected = best_answer(windows, [s for s, _e in logits], [e for _s, e in logits], long_paragraph, 8)
    a = d["answer"]
    assert (a.text, a.window, a.start, a.end) == (expected.text, expected.window, expected.start, expected.end)
    assert a.score == pytest.approx(expected.score, abs=1e-4)
    for k, (w, cands) in enumerate(zip(windows, d["candidates"])):
        assert 1 <= len(cands) <= 4
        scores = [c[2] for c in cands]
        assert scores == sorted(scores, reverse=True)
        for i, j, score, text in cands:
            assert w.context_start <= i <= j <= len(w) - 2            # paragraph pieces, start <= end
            assert j - i + 1 <= 8                                     # at most max_answer_len pieces
            assert score == d["start_logits"][k][i] + d["end_logits"][k][j]
            assert text == span_text(w, long_paragraph, i, j)
        # the first candidate is the span best_span picks in the window
        s, e = (torch.from_numpy(x).float() for x in (d["start_logits"][k], d["end_logits"][k]))
        assert cands[0][:3] == best_span(s, e, w, 8)
    assert d["candidates"][a.window][0] == (a.start, a.end, a.score, a.text)


def test_a_long_paragraph_needs_several_windows_and_each_is_drawn(model, tokenizer, long_paragraph):
    d = span_data(model, tokenizer, "Where do people fish?", long_paragraph)
    windows = d["windows"]
    assert len(windows) == 4 and [len(w) for w in windows[:3]] == [128, 128, 128]
    room = 128 - windows[0].context_start - 1
    for a, b in zip(windows, windows[1:]):                      # neighbours share stride=32 pieces
        assert b.first_piece == a.first_piece + room - 32
    assert [len(p) for p in d["start_probs"]] == [len(w) for w in windows] == [len(p) for p in d["end_probs"]]
    assert len(d["candidates"]) == len(d["alone"]) == len(d["notes"]) == 4
    answer = d["answer"].window
    for k in sorted({answer, 3}):                    # the answer's window, and the last, shorter one
        w, fig = windows[k], draw_spans(d, k)
        rows = fig.axes[:-1]
        assert len(rows) == -(-len(w) // 48)                 # wrapped: at most 48 pieces a row
        labels = [t.get_text() for ax in rows for t in ax.get_xticklabels()]
        assert labels == list(w.pieces)
        heights = [p.get_height() for ax in rows for p in ax.containers[0]]
        np.testing.assert_allclose(heights, d["start_probs"][k])
        assert fig._suptitle.get_text().startswith(f"window {k + 1} of 4:")
        legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
        shaded = "the answer" if k == d["answer"].window else "this window's best span (another window's scores higher)"
        assert shaded in legend
        # the shaded span is the window's best span, wherever its rows are
        spans = [p for ax in rows for p in ax.patches if p.get_gid() == "span"]
        first, last = d["candidates"][k][0][:2]
        assert round(spans[0].get_x() + 0.5) == first
        assert round(spans[-1].get_x() + spans[-1].get_width() - 0.5) == last


def test_the_heads_taken_alone_and_what_the_note_says(tokenizer):
    context = "The river Thames runs through London, the capital of England."
    alone = "Taken alone, the most probable start is {} and the most probable end is {}: "

    def run(starts, ends, question="What is it?", **settings):
        d = span_data(LookupSpans(tokenizer, starts, ends), tokenizer, question, context, **settings)
        w = d["windows"][0]
        return d, list(w.pieces), w

    # the end before the start: no span; the answer is the best pair with start <= end
    d, pieces, w = run({"london": 5.0}, {"thames": 4.0})
    i, j = pieces.index("london"), pieces.index("thames")
    assert d["alone"] == [(i, j)] and j < i
    assert d["notes"][0] == alone.format(f'"london" (position {i})', f'"thames" (position {j})') + \
        "the end comes before the start, so they make no span: the decoder picks the best pair with start ≤ end " \
        "instead."
    assert (d["answer"].text, d["answer"].start, d["answer"].end, d["answer"].score) == ("London", i, i, 5.0)
    assert d["message"] == f'answer: "London" (window 1 of 1, pieces {i}-{i}, score 5.00)'
    # both at [CLS]: "not in this window", as training labels a window without the answer
    d, pieces, w = run({"[CLS]": 9.0, "river": 1.0}, {"[CLS]": 9.0, "thames": 1.0})
    assert d["alone"] == [(0, 0)] and d["answer"].text == "river Thames"
    assert "both are [CLS], the label of a window that does not hold the answer" in d["notes"][0]
    # a question piece: the most probable start, but never an answer
    d, pieces, w = run({"which": 6.0, "capital": 2.0}, {"england": 2.0}, question="Which river?")
    assert d["alone"] == [(1, pieces.index("england"))] and pieces[1] == "which"
    assert "they are not both pieces of the paragraph" in d["notes"][0]
    assert d["answer"].text == "capital of England"
    # a span longer than max_answer_len
    d, pieces, w = run({"river": 5.0}, {"england": 5.0}, max_answer_len=4)
    assert "a span of 10 pieces, longer than max_answer_len=4, so the decoder picks the best shorter pair" \
        in d["notes"][0]
    assert d["answer"].text == "river"         # the pairs that score 5.0 tie: the earliest start, then end
    # both agree: the span they make is the answer
    d, pieces, w = run({"thames": 3.0}, {"london": 3.0})
    assert d["notes"][0].endswith("together they make this window's best span.")
    assert d["answer"].text == "Thames runs through London" and d["candidates"][0][0][2] == 6.0


def test_predictions_are_made_in_eval_mode_and_the_mode_is_given_back(tokenizer):
    model = tiny_spans(dropout=0.5)                     # in training mode every call would differ
    expected = span_data(model, tokenizer, QUESTION, PARAGRAPH)["start_logits"][0]
    model.train()
    for _ in range(2):
        np.testing.assert_allclose(span_data(model, tokenizer, QUESTION, PARAGRAPH)["start_logits"][0], expected,
                                   atol=1e-6)
    assert model.training


def test_wrong_arguments_are_named(model, tokenizer):
    with pytest.raises(TypeError, match="model must be a SpanPredictor"):
        span_data(TokenTagger(config(), num_tags=7), tokenizer, QUESTION, PARAGRAPH)
    with pytest.raises(TypeError, match="tokenizer must be"):
        span_data(model, "bert-base-uncased", QUESTION, PARAGRAPH)
    small = train_wordpiece(["the river runs by the town ."] * 4, vocab_size=60, min_frequency=1)
    with pytest.raises(ValueError, match="tokenizer and model do not fit"):
        span_data(tiny_spans(vocab_size=20, max_len=64), small, QUESTION, PARAGRAPH)
    for name, args in (("question", ("", PARAGRAPH)), ("question", ("  \n", PARAGRAPH)),
                       ("context", (QUESTION, ""))):
        with pytest.raises(ValueError, match=f"{name} must be a non-empty text"):
            span_data(model, tokenizer, *args)
    with pytest.raises(TypeError, match="question must be a str"):
        span_data(model, tokenizer, ["Which", "river?"], PARAGRAPH)
    with pytest.raises(TypeError, match="context must be a str"):
        span_data(model, tokenizer, QUESTION, None)
    with pytest.raises(ValueError, match="context has no word pieces"):
        span_data(model, tokenizer, QUESTION, "\u200b")
    with pytest.raises(ValueError, match="max_len must be at most the model's max_len=64"):
        span_data(tiny_spans(max_len=64), small, QUESTION, PARAGRAPH)          # 128 positions by default
    for name, value, error in (("max_len", 0, ValueError), ("max_len", 12.0, TypeError), ("stride", -1, ValueError),
                               ("max_answer_len", 0, ValueError), ("top", 0, ValueError), ("top", "5", TypeError),
                               ("max_question_len", True, TypeError)):
        with pytest.raises(error, match=name):
            span_data(model, tokenizer, QUESTION, PARAGRAPH, **{name: value})
    with pytest.raises(ValueError, match="max_len=16 leaves room for"):     # make_windows: no room after the question
        span_data(model, tokenizer, QUESTION, PARAGRAPH, max_len=16, stride=8)
    d = span_data(model, tokenizer, QUESTION, PARAGRAPH)
    with pytest.raises(TypeError, match="data must be the dict"):
        draw_spans([0.2, 0.8])
    with pytest.raises(ValueError, match="data must have the keys"):
        draw_spans({"start_probs": [np.ones(3) / 3]})
    with pytest.raises(ValueError, match="window must be an int with 0 <= window <= 0, got 1"):
        draw_spans(d, 1)
    with pytest.raises(TypeError, match="window must be an int"):
        draw_spans(d, "1")
    for examples, error, match in (("Which river?", TypeError, "examples must be a list"),
                                   ([("Which river?",)], ValueError, r"examples\[0\] must have 2 entries"),
                                   ([(QUESTION, PARAGRAPH), (QUESTION, 3)], TypeError, r"examples\[1\]\[1\]"),
                                   ([("", PARAGRAPH)], ValueError, r"examples\[0\]\[0\] \(the question\)"),
                                   ([QUESTION], TypeError, "examples must be a list of")):
        with pytest.raises(error, match=match):
            SpanExplorer(model, tokenizer, examples)
    with pytest.raises(ValueError, match="max_len must be at least stride \\+ 5 = 37"):
        SpanExplorer(model, tokenizer, [], max_len=36, stride=32)
    with pytest.raises(TypeError, match="model must be a SpanPredictor"):
        SpanExplorer(TokenTagger(config(), num_tags=7), tokenizer, [])
    with pytest.raises(ValueError, match="stride"):
        SpanExplorer(model, tokenizer, [], stride=-1)


# --- the figure ------------------------------------------------------------------------------

def test_draw_spans_bars_colours_span_triangles_and_candidates(model, tokenizer):
    d = span_data(model, tokenizer, QUESTION, PARAGRAPH, top=3)
    fig = draw_spans(d)
    w, (ax, table) = d["windows"][0], fig.axes
    n, context = len(w), set(w.context_positions)
    assert [t.get_text() for t in ax.get_xticklabels()] == list(w.pieces)
    starts, ends = ax.containers
    np.testing.assert_allclose([b.get_height() for b in starts], d["start_probs"][0])
    np.testing.assert_allclose([-b.get_height() for b in ends], d["end_probs"][0])     # bars down
    for k in range(n):                 # blue and orange on the paragraph; grey on [CLS], the question, [SEP]
        assert starts[k].get_facecolor() == to_rgba(START_COLOUR if k in context else NEVER_COLOUR)
        assert ends[k].get_facecolor() == to_rgba(END_COLOUR if k in context else NEVER_COLOUR)
        label = ax.get_xticklabels()[k]
        assert (label.get_fontstyle() == "italic") == (k not in context)
    (span,) = [p for p in ax.patches if p.get_gid() == "span"]
    a = d["answer"]
    assert (span.get_x(), span.get_x() + span.get_width()) == (a.start - 0.5, a.end + 0.5)
    (i, j), = d["alone"]
    (tri_s,), (tri_e,) = ([line for line in ax.lines if line.get_gid() == gid] for gid in ("alone start", "alone end"))
    assert tri_s.get_xdata()[0] == i and tri_s.get_ydata()[0] > d["start_probs"][0][i]
    assert tri_e.get_xdata()[0] == j and tri_e.get_ydata()[0] < -d["end_probs"][0][j]
    texts = [t.get_text() for t in table.texts]
    assert [t.replace("\n", " ") for t in texts[:2]] == [d["message"], d["notes"][0]]     # wrapped to fit
    assert texts[2:6] == ["#", "pieces", "score", "text"]
    rows = [texts[6 + 4 * r: 10 + 4 * r] for r in range(3)]
    assert rows == [[str(r + 1), f"{s}-{e}", f"{score:.2f}", text]
                    for r, (s, e, score, text) in enumerate(d["candidates"][0])]
    bold = [t.get_fontweight() for t in table.texts[6:]]
    assert bold == ["bold"] * 4 + ["normal"] * 8                 # the answer's row
    assert "the answer" in [t.get_text() for t in ax.get_legend().get_texts()]


# --- the widget ------------------------------------------------------------------------------

class CountingExplorer(SpanExplorer):
    """Counts its draws: one per change of a control."""
    draws = 0

    def draw(self, state):
        self.draws += 1
        return super().draw(state)


def test_widget_examples_boxes_and_windows(tokenizer, long_paragraph, monkeypatch):
    # the figure is read here, not its PNG (FigureWidget's, tested with every widget): skip the slow rendering
    monkeypatch.setattr(widgets, "figure_html", lambda fig, dpi=90: "")
    model = tiny_spans()
    model.train()
    examples = [(QUESTION, PARAGRAPH), ("Where do people fish?", long_paragraph)]
    w = CountingExplorer(model, tokenizer, examples, max_len=64, stride=16)
    assert w.draws == 1 and len(w.example.options) == len(examples) + 1
    assert w.example.value == 0 and (w.question.value, w.context.value) == examples[0]
    assert set(w.state) == KEYS | {"example", "window"} and w.state["window"] == 0 and w.window.disabled
    assert w.state["answer"] == span_data(model, tokenizer, *examples[0], max_len=64, stride=16)["answer"]
    assert w.info.value.startswith("<b>answer: &quot;")

    w.example.value = 1                       # an example fills both boxes: one redraw
    assert w.draws == 2 and (w.question.value, w.context.value) == examples[1] and w.state["example"] == 1
    n, answer = len(w.state["windows"]), w.state["answer"].window
    assert n > 3 and not w.window.disabled
    assert [v for _label, v in w.window.options] == list(range(n)) and w.window.value == answer == w.state["window"]
    assert w.window.options[answer][0] == f"window {answer + 1} of {n} (the answer's)"
    expected = span_data(model, tokenizer, *examples[1], max_len=64, stride=16)
    assert w.state["answer"] == expected["answer"] and w.state["notes"] == expected["notes"]

    other = (answer + 1) % n                  # another window: one redraw, the same answer
    w.window.value = other
    assert w.draws == 3 and w.state["window"] == other and w.state["answer"] == expected["answer"]
    assert w.figure._suptitle.get_text().startswith(f"window {other + 1} of {n}:")
    assert html.escape(w.state["notes"][other]) in w.info.value
    pieces = len(tokenizer.encode(long_paragraph, add_special_tokens=False).ids)
    assert w.info.value.endswith(f"the paragraph: {pieces} pieces, {n} windows")

    w.question.value = "Who fishes in the lake?"      # editing a box leaves the example, shows the answer's window
    assert w.draws == 4 and w.example.value == TYPE_YOUR_OWN and w.state["example"] == TYPE_YOUR_OWN
    assert w.state["window"] == w.state["answer"].window == w.window.value
    before = w.info.value
    w.context.value = long_paragraph + " again"      # a word added at the end: the line under the figure changes
    assert w.draws == 5 and w.info.value != before and f"{pieces + 1} pieces" in w.info.value
    w.context.value = long_paragraph
    assert w.draws == 6

    w.context.value = PARAGRAPH                       # one window again: the menu follows
    assert w.draws == 7 and len(w.window.options) == 1 and w.window.disabled and w.state["window"] == 0
    assert model.training                             # the widget gives the mode back

    w.question.value = " "
    assert w.draws == 8 and w.state["windows"] is None and w.state["window"] is None
    assert w.info.value == "<b>type a question and a paragraph</b>"
    assert w.figure.axes[0].texts[0].get_text() == "type a question and a paragraph"
    w.question.value, w.context.value = QUESTION, "\u200b"
    assert w.state["message"] == "the paragraph has no word pieces: the tokenizer drops all of its characters"

    empty = SpanExplorer(model, tokenizer, [])            # no example: the boxes start blank
    assert empty.example.value == TYPE_YOUR_OWN and empty.state["windows"] is None
