"""Headless tests of the attention explorer (bertcourse.widgets.attention)."""
import math
import subprocess
import sys

import matplotlib
import numpy as np
import pytest
import torch

matplotlib.use("Agg")

from bertcourse.widgets import attention as wa  # noqa: E402
from bertcourse.widgets.attention import (HEAD_NAMES, MAX_TOKENS, SENTENCES, AttentionExplorer,  # noqa: E402
                                          attention_for_sentence, category, draw_attention, entropy,  # entropy: from bertcourse.attention
                                          explorer_model, tokenize, word_vectors)
from bertcourse.widgets.drawing import draw_heatmap  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402


def heatmap(fig):
    return np.asarray(fig.axes[0].images[0].get_array())


def bars(fig):
    return np.array([p.get_height() for p in fig.axes[1].patches])


# --- pure functions --------------------------------------------------------------------

def test_tokenize():
    assert tokenize("The cat sat.") == ["the", "cat", "sat", "."]
    assert tokenize("It's  LATE, isn't it?") == ["it's", "late", ",", "isn't", "it", "?"]
    assert tokenize("   \t ") == []
    with pytest.raises(TypeError, match="text must be a str, got int"):
        tokenize(3)


def test_categories_from_lexicon_and_suffixes():
    assert [category(w) for w in ["cat", "teacher", "it", "sat", "tired", "the", ".", "mat"]] == \
        ["animal", "person", "pronoun", "verb", "adjective", "function", "punctuation", "thing"]
    assert category("jumped") == "verb" and category("quickly") == "adjective"
    assert category("zyxwv") == "thing"


def test_word_vectors_are_deterministic_across_processes():
    here = word_vectors(["the", "cat", "the"])
    assert here.shape == (3, 32)
    assert torch.equal(here[0, 16:], here[2, 16:])          # same word, same identity block
    code = ("from bertcourse.widgets.attention import word_vectors;"
            "print(word_vectors(['the', 'cat', 'the']).flatten().tolist())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert torch.tensor(eval(out.stdout)).reshape(3, 32).equal(here)


def test_weights_are_those_of_the_multi_head_attention_model():
    """At temperature 1 the explorer's weights are exactly MultiHeadAttention's stored weights."""
    tokens = tokenize(SENTENCES[1])
    model = explorer_model()
    x = word_vectors(tokens).unsqueeze(0)
    with torch.no_grad():
        out = model(x, x, x)
    assert out.shape == (1, len(tokens), 32)
    torch.testing.assert_close(attention_for_sentence(tokens), model.attention_weights[0])
    for h in range(4):
        torch.testing.assert_close(attention_for_sentence(tokens, h), model.attention_weights[0, h])


@pytest.mark.parametrize("tau", [0.3, 1.0, 2.5])
def test_temperature_divides_the_scores(tau):
    tokens = tokenize(SENTENCES[0])
    model = explorer_model()
    x = word_vectors(tokens)
    with torch.no_grad():
        q = (x @ model.W_q.weight.T).view(len(tokens), 4, 8).transpose(0, 1)
        k = (x @ model.W_k.weight.T).view(len(tokens), 4, 8).transpose(0, 1)
    want = torch.softmax(q @ k.transpose(-2, -1) / (math.sqrt(8) * tau), dim=-1)
    torch.testing.assert_close(attention_for_sentence(tokens, temperature=tau), want)


@pytest.mark.parametrize("sentence", SENTENCES)
def test_heads_do_what_the_docstring_says(sentence):
    tokens = tokenize(sentence)
    w = attention_for_sentence(tokens)
    assert w.shape == (4, len(tokens), len(tokens))
    torch.testing.assert_close(w.sum(-1), torch.ones(4, len(tokens)))
    # head 1: every token but the first attends most to the previous token
    assert [int(w[1, i].argmax()) for i in range(1, len(tokens))] == list(range(len(tokens) - 1))
    assert min(float(w[1, i, i - 1]) for i in range(1, len(tokens))) > 0.8
    # head 0: each query puts more weight on a key of its own kind than on any other kind
    cats = [category(t) for t in tokens]
    for i in range(len(tokens)):
        same = [j for j in range(len(tokens)) if cats[j] == cats[i]]
        other = [j for j in range(len(tokens)) if cats[j] != cats[i]]
        if other:
            assert w[0, i, same].min() > w[0, i, other].max()
    # head 2: a pronoun attends most to an animal or a person
    for i, t in enumerate(tokens):
        if cats[i] == "pronoun":
            assert cats[int(w[2, i].argmax())] in ("animal", "person")


def test_head_2_links_it_to_cat():
    tokens = tokenize(SENTENCES[0])
    w = attention_for_sentence(tokens, head=2)
    assert tokens[int(w[tokens.index("it")].argmax())] == "cat"


def test_entropy():
    uniform = torch.full((1, 4), 0.25)
    torch.testing.assert_close(entropy(uniform), torch.tensor([math.log(4)]))
    assert entropy(torch.tensor([[1.0, 0.0, 0.0]])).item() == 0.0


@pytest.mark.parametrize("bad, error, pattern", [
    (dict(tokens=[]), ValueError, "tokens must hold at least one token"),
    (dict(tokens="the cat"), TypeError, "tokens must be a list of str, got str"),
    (dict(temperature=0.0), ValueError, "temperature must be a number > 0, got 0.0"),
    (dict(head=4), ValueError, r"head must be an int in \[0, 3\] or None, got 4"),
])
def test_attention_for_sentence_errors(bad, error, pattern):
    kwargs = dict(tokens=["the", "cat"], head=None, temperature=1.0) | bad
    with pytest.raises(error, match=pattern):
        attention_for_sentence(**kwargs)


def test_draw_attention_figure_data():
    tokens = tokenize(SENTENCES[3])
    w = attention_for_sentence(tokens, head=0)
    fig = draw_attention(tokens, w, 4)
    np.testing.assert_allclose(heatmap(fig), w.numpy())
    np.testing.assert_allclose(bars(fig), w[4].numpy())
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == tokens
    assert [t.get_text() for t in ax.get_yticklabels()] == tokens
    outline = ax.patches[0]                                  # the chosen query's row
    assert outline.get_y() == pytest.approx(4 - 0.5) and outline.get_height() == 1
    assert outline.get_width() == len(tokens)
    # one colour per meaning: the outline's, the largest bar's and the other bars' all differ
    from matplotlib.colors import to_hex
    bar_colours = [to_hex(p.get_facecolor()) for p in fig.axes[1].patches]
    top = int(w[4].argmax())
    others = {c for j, c in enumerate(bar_colours) if j != top}
    assert len(others) == 1 and bar_colours[top] not in others
    assert to_hex(outline.get_edgecolor()) not in {bar_colours[top], *others}


def test_draw_attention_errors():
    with pytest.raises(ValueError, match=r"weights must have shape \(queries=2, keys=2\), got shape \(3, 3\)"):
        draw_attention(["a", "b"], torch.zeros(3, 3), 0)
    with pytest.raises(ValueError, match=r"query_index must be in \[0, 1\], got 2"):
        draw_attention(["a", "b"], torch.zeros(2, 2), 2)


def test_draw_heatmap_data_labels_and_limits():
    w = torch.tensor([[0.25, 0.75, 0.0], [1.0, 0.0, 0.0]])         # 2 queries, 3 keys
    fig = Figure()
    ax = fig.add_subplot()
    im = draw_heatmap(ax, w, ["q0", "q1"], ["a", "b", "c"], title="t")
    assert list(ax.images) == [im]
    np.testing.assert_array_equal(np.asarray(im.get_array()), w.numpy())
    assert not np.ma.getmaskarray(im.get_array()).any()
    assert im.get_clim() == (0.0, 1.0) and im.get_cmap().name.startswith("Blues")
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a", "b", "c"]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["q0", "q1"]
    assert all(t.get_rotation() == 60 and t.get_ha() == "right" for t in ax.get_xticklabels())
    assert (ax.get_xlabel(), ax.get_ylabel(), ax.get_title()) == ("keys", "queries", "t")
    assert len(fig.axes) == 2                                         # the map and its colour bar


def test_draw_heatmap_options():
    s = torch.tensor([[0.5, 2.0], [1.5, 0.0]])                       # not weights: e.g. entropies
    fig = Figure()
    ax = fig.add_subplot()
    im = draw_heatmap(ax, s, ["1", "2"], ["1", "2"], hidden=s == 0, cmap="viridis", vmax=None,
                      rotation=0, xlabel="", ylabel="", colorbar=None)
    fig.canvas.draw()
    assert im.get_clim() == (0.0, 2.0) and im.get_cmap().name.startswith("viridis")
    np.testing.assert_array_equal(np.ma.getmaskarray(im.get_array()), [[False, False], [False, True]])
    assert (ax.get_xlabel(), ax.get_ylabel(), ax.get_title()) == ("", "", "")
    assert all(t.get_ha() == "center" for t in ax.get_xticklabels())
    assert len(fig.axes) == 1


@pytest.mark.parametrize("weights, rows, cols, extra, pattern", [
    (torch.zeros(2, 3, 1), ["a", "b"], ["x", "y", "z"], {}, r"weights must have shape \(queries, keys\) \(2-D\), got shape \(2, 3, 1\)"),
    (torch.zeros(2, 3), ["a"], ["x", "y", "z"], {}, r"need 2 row labels and 3 column labels \(row_labels, col_labels\)"),
    (torch.zeros(2, 3), ["a", "b"], ["x", "y", "z"], {"hidden": torch.zeros(3, 2, dtype=torch.bool)},
     r"hidden must be a bool tensor of shape \(2, 3\) .*got torch.bool of shape \(3, 2\)"),
])
def test_draw_heatmap_errors(weights, rows, cols, extra, pattern):
    with pytest.raises(ValueError, match=pattern):
        draw_heatmap(Figure().add_subplot(), weights, rows, cols, **extra)


# --- the widget -------------------------------------------------------------------------

@pytest.fixture
def explorer():
    w = AttentionExplorer()
    yield w
    import matplotlib.pyplot as plt
    plt.close("all")


def test_initial_state(explorer):
    s = explorer.state
    assert s["tokens"] == tokenize(SENTENCES[0])
    assert s["query"] == s["tokens"].index("it") and s["head"] == 2 and s["temperature"] == 1.0
    torch.testing.assert_close(s["weights"], attention_for_sentence(s["tokens"], 2))
    assert "query 'it' attends most to 'cat'" in s["message"]
    assert explorer.info.value == f"<b>{s['message']}</b>"


def test_figure_shows_the_state(explorer):
    explorer.head.value = 1
    explorer.query.value = 3
    s = explorer.state
    assert s["head"] == 1 and s["query"] == 3
    want = attention_for_sentence(s["tokens"], 1).numpy()
    np.testing.assert_allclose(heatmap(explorer.figure), want)
    np.testing.assert_allclose(bars(explorer.figure), want[3])
    assert bars(explorer.figure).sum() == pytest.approx(1.0, abs=1e-6)
    assert explorer.figure.axes[0].patches[0].get_y() == pytest.approx(2.5)


def test_the_figure_is_shown_in_the_widget(explorer):
    """The widget's output area holds the current figure as an inline PNG."""
    import base64
    prefix = '<img src="data:image/png;base64,'
    before = explorer.output.value
    assert before.startswith(prefix)
    assert base64.b64decode(before[len(prefix):].split('"')[0])[:8] == b"\x89PNG\r\n\x1a\n"
    explorer.head.value = 0
    assert explorer.output.value.startswith(prefix) and explorer.output.value != before
    assert explorer.output in explorer.widget.children


def test_sentence_dropdown_sets_text_and_queries(explorer):
    explorer.sentence.value = SENTENCES[3]
    tokens = tokenize(SENTENCES[3])
    assert explorer.text.value == SENTENCES[3]
    assert explorer.state["tokens"] == tokens
    assert [label for label, _ in explorer.query.options] == [f"{i}: {t}" for i, t in enumerate(tokens)]
    assert explorer.state["query"] == 0 == explorer.query.value    # no pronoun: the first token
    np.testing.assert_allclose(heatmap(explorer.figure), attention_for_sentence(tokens, 2).numpy())


def test_linked_controls_redraw_once(explorer, monkeypatch):
    # choosing a sentence sets the text box and the query list too (FigureWidget.link):
    # one redraw for the three changes, not one each
    calls = []
    update = explorer.update
    monkeypatch.setattr(explorer, "update", lambda: (calls.append(1), update()))
    explorer.sentence.value = SENTENCES[2]
    assert len(calls) == 1 and explorer.text.value == SENTENCES[2]


def test_free_text_updates_the_token_dropdown(explorer):
    explorer.query.value = 2
    explorer.text.value = "Dogs chase happy cats"
    assert [v for _, v in explorer.query.options] == [0, 1, 2, 3]
    assert [label for label, _ in explorer.query.options] == ["0: dogs", "1: chase", "2: happy", "3: cats"]
    assert explorer.state["query"] == 2                      # still in range: kept
    explorer.query.value = 3
    explorer.text.value = "Birds fly"
    assert explorer.state["query"] == 0                      # out of range: back to the default
    assert explorer.state["tokens"] == ["birds", "fly"]
    np.testing.assert_allclose(bars(explorer.figure), attention_for_sentence(["birds", "fly"], 2)[0].numpy())


def test_hotter_temperature_is_flatter(explorer):
    explorer.head.value = 0
    cold = explorer.state["weights"].clone()
    explorer.temperature.value = 3.0
    hot = explorer.state["weights"]
    assert not torch.allclose(cold, hot)
    assert (entropy(hot) > entropy(cold)).all()
    np.testing.assert_allclose(heatmap(explorer.figure), hot.numpy())
    explorer.temperature.value = 0.2
    assert (entropy(explorer.state["weights"]) < entropy(cold)).all()


@pytest.mark.parametrize("text", ["", "   \t  "])
def test_empty_text_shows_a_message_and_recovers(explorer, text):
    explorer.text.value = text
    s = explorer.state
    assert s["tokens"] == [] and s["weights"] is None and s["query"] is None
    assert "Type at least one word" in s["message"]
    assert explorer.query.options == ()
    assert len(explorer.figure.axes[0].images) == 0
    assert "Type at least one word" in explorer.figure.axes[0].texts[0].get_text()
    explorer.head.value = 1                                  # other controls do not crash either
    explorer.temperature.value = 2.0
    assert explorer.state["weights"] is None
    explorer.text.value = "the cat sat"
    assert explorer.state["tokens"] == ["the", "cat", "sat"] and explorer.state["query"] == 0
    assert heatmap(explorer.figure).shape == (3, 3)


def test_long_text_is_truncated_with_a_message(explorer):
    explorer.text.value = " ".join(["word"] * (MAX_TOKENS + 6))
    assert len(explorer.state["tokens"]) == MAX_TOKENS
    assert f"Showing the first {MAX_TOKENS} of {MAX_TOKENS + 6} tokens" in explorer.state["message"]
    assert len(explorer.query.options) == MAX_TOKENS


def test_every_head_and_query_draws(explorer):
    last = len(explorer.state["tokens"]) - 1
    for h in range(len(HEAD_NAMES)):
        explorer.head.value = h
        explorer.query.value = last if h % 2 else 0
        row = explorer.state["row"]
        np.testing.assert_allclose(row.numpy(), attention_for_sentence(explorer.state["tokens"], h)[
            explorer.query.value].numpy())
        np.testing.assert_allclose(bars(explorer.figure), row.numpy())
        assert HEAD_NAMES[h] in explorer.state["message"]


def test_custom_start_text():
    w = AttentionExplorer("my own words here", head=1, temperature=0.5)
    assert w.state["tokens"] == ["my", "own", "words", "here"]
    assert w.state["head"] == 1 and w.state["temperature"] == 0.5
    assert wa.SENTENCES[0] == w.sentence.value


def test_figure_html_draws_a_laid_out_figure_once_and_gives_matplotlibs_pixels(monkeypatch):
    """``tight_layout`` leaves a placeholder layout engine, for which ``savefig`` draws the figure
    twice; ``figure_html`` drops it: one draw, and the PNG matplotlib itself would save."""
    import base64
    import io

    from matplotlib.figure import Figure

    from bertcourse.widgets import figure_html

    def laid_out():
        fig = Figure(figsize=(4, 3))
        ax = fig.subplots()
        ax.imshow(np.arange(12.0).reshape(3, 4))
        ax.set(title="a title", xlabel="keys", ylabel="queries")
        fig.tight_layout()
        return fig

    expected = io.BytesIO()
    laid_out().savefig(expected, format="png", dpi=90)
    draws = []
    real_draw = Figure.draw
    monkeypatch.setattr(Figure, "draw", lambda self, renderer: (draws.append(1), real_draw(self, renderer))[1])
    html = figure_html(laid_out())
    png = base64.b64decode(html.split("base64,")[1].split('"')[0])
    assert len(draws) == 1 and png == expected.getvalue()
