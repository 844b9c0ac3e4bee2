"""Headless tests of the pair sampler (bertcourse.widgets.nsp)."""
import base64
import math

import matplotlib
import numpy as np
import pytest
from figures import bar_heights, plain_texts, token_boxes
from matplotlib.colors import to_rgba

matplotlib.use("Agg")

from bertcourse.bert import get_tokens_and_segments  # noqa: E402
from bertcourse.data import (IS_NEXT, NOT_NEXT, generate_corpus, get_tokenizer, make_nsp_pair,  # noqa: E402
                             sample_pair, truncate_pair)
from bertcourse.data import draw_rng as pair_rng  # noqa: E402
from bertcourse.widgets.nsp import (SEGMENT_COLOURS, PairSampler, draw_pair, label_name,  # noqa: E402
                                    pair_tokens, tally)


@pytest.fixture(scope="module")
def tok():
    return get_tokenizer(0)


@pytest.fixture(scope="module")
def paragraphs():
    return generate_corpus(0).train



# --- pure functions --------------------------------------------------------------------

def test_pair_rng_repeats_and_differs():
    assert pair_rng(2, 5).random() == pair_rng(2, 5).random()
    assert pair_rng(2, 5).random() != pair_rng(2, 6).random() != pair_rng(3, 5).random()
    with pytest.raises(ValueError, match="seed must be >= 0, got -3"):
        pair_rng(-3, 0)
    with pytest.raises(TypeError, match=r"draw must be an int, got bool \(True\)"):
        pair_rng(0, True)


def test_sample_pair_replays_make_nsp_pair(paragraphs):
    for draw in range(30):
        a, b, label, j = sample_pair(paragraphs, 4, draw)
        rng = pair_rng(4, draw)                      # the same steps by hand
        jj = rng.randrange(len(paragraphs))          # every corpus paragraph has >= 2 sentences
        i = rng.randrange(len(paragraphs[jj]) - 1)
        assert (a, b, label) == make_nsp_pair(paragraphs[jj], i, paragraphs, rng)
        assert j == jj and a == paragraphs[j][i]


def test_sample_pair_labels_are_true(paragraphs):
    for draw in range(300):
        a, b, label, j = sample_pair(paragraphs, 0, draw)
        par = paragraphs[j]
        i = par.index(a)
        if label == IS_NEXT:
            assert b == par[i + 1]
        else:
            assert label == NOT_NEXT
            assert any(b in p for k, p in enumerate(paragraphs) if k != j)


def test_sample_pair_is_half_isnext(paragraphs):
    """4,000 draws: sd of the IsNext share sqrt(0.25 / 4000) = 0.0079; tolerance 0.032 (4 sd)."""
    labels = [sample_pair(paragraphs, 1, d)[2] for d in range(4000)]
    assert abs(labels.count(IS_NEXT) / 4000 - 0.5) < 4 * math.sqrt(0.25 / 4000)


def test_sample_pair_skips_short_paragraphs_and_errors():
    paragraphs = [["only one ."], ["a1 .", "a2 ."], ["b1 .", "b2 .", "b3 ."], []]
    for d in range(50):
        a, b, label, j = sample_pair(paragraphs, 0, d)
        assert j in (1, 2)
    with pytest.raises(ValueError, match="at least two paragraphs"):
        sample_pair([["a .", "b ."], ["c ."]], 0, 0)
    with pytest.raises(TypeError, match="paragraphs must be a list of paragraphs"):
        sample_pair("a . b .", 0, 0)


def test_pair_tokens(tok):
    a = "the capital of velora is tarnum and it lies on the river osk ."
    b = "it is small ."
    ta, tb = tok.tokenize(a), tok.tokenize(b)
    tokens, segments, before, after = pair_tokens(a, b, tok, 64)
    assert (tokens, segments) == get_tokens_and_segments(ta, tb)
    assert before == after == (len(ta), len(tb))
    tokens, segments, before, after = pair_tokens(a, b, tok, 12)
    assert len(tokens) == 12 and before == (len(ta), len(tb))
    assert after == (12 - 3 - len(tb), len(tb))                 # the longer sentence is cut first
    assert (tokens, segments) == get_tokens_and_segments(*truncate_pair(ta, tb, 12))
    with pytest.raises(TypeError, match="tokenizer must be a WordPieceTokenizer"):
        pair_tokens(a, b, None, 12)


def test_labels_and_tally():
    assert IS_NEXT == 0 and NOT_NEXT == 1
    assert label_name(0) == "IsNext" and label_name(1) == "NotNext"
    assert tally([0, 1, 1, 0, 0]) == {"IsNext": 3, "NotNext": 2}
    assert tally([]) == {"IsNext": 0, "NotNext": 0}
    for bad in (2, -1, True, "0"):
        with pytest.raises(ValueError, match=r"label must be 0 \(IsNext\) or 1 \(NotNext\)"):
            label_name(bad)


def test_draw_pair_figure_data():
    tokens, segments = get_tokens_and_segments(["the", "cat", "sat"], ["it", "slept"])
    fig = draw_pair(tokens, segments, NOT_NEXT, {"IsNext": 3, "NotNext": 1}, title="t")
    assert [t for t, _ in token_boxes(fig)] == tokens
    assert [c for _, c in token_boxes(fig)] == [to_rgba(SEGMENT_COLOURS[s]) for s in segments]
    assert plain_texts(fig) == [str(s) for s in segments]
    np.testing.assert_allclose(bar_heights(fig), [0.75, 0.25])
    assert "NotNext (label 1)" in fig.axes[0].get_title(loc="left")
    fig = draw_pair(tokens, segments, IS_NEXT)
    assert "IsNext (label 0)" in fig.axes[0].get_title(loc="left")
    np.testing.assert_allclose(bar_heights(fig), [1.0, 0.0])
    with pytest.raises(ValueError, match="same length > 0"):
        draw_pair(tokens, segments[:-1], 0)
    with pytest.raises(ValueError, match="label must be"):
        draw_pair(tokens, segments, 2)


# --- the widget -------------------------------------------------------------------------

@pytest.fixture
def sampler(tok, paragraphs):
    w = PairSampler(tok, paragraphs)
    yield w
    import matplotlib.pyplot as plt
    plt.close("all")


def check_consistent(w, tok, paragraphs):
    s = w.state
    labels = [sample_pair(paragraphs, s["seed"], d)[2] for d in range(s["num_draws"])]
    assert s["labels"] == labels and s["tally"] == tally(labels)
    a, b, label, j = sample_pair(paragraphs, s["seed"], s["num_draws"] - 1)
    assert (s["sentence_a"], s["sentence_b"], s["label"], s["paragraph"]) == (a, b, label, j)
    tokens, segments, before, after = pair_tokens(a, b, tok, s["max_len"])
    assert (s["tokens"], s["segments"], s["lengths_before"], s["lengths_after"]) == (tokens, segments, before, after)
    assert [t for t, _ in token_boxes(w.figure)] == tokens
    n = len(labels)
    np.testing.assert_allclose(bar_heights(w.figure), [labels.count(0) / n, labels.count(1) / n])
    assert s["label_name"] in w.info.value and s["sentence_b"] in w.info.value


def test_initial_state(sampler, tok, paragraphs):
    s = sampler.state
    assert s["seed"] == 0 and s["max_len"] == 32 and s["num_draws"] == 1
    check_consistent(sampler, tok, paragraphs)


def test_draw_buttons_and_the_tally(sampler, tok, paragraphs):
    sampler.draw_one.click()
    sampler.draw_one.click()
    assert sampler.state["num_draws"] == 3
    check_consistent(sampler, tok, paragraphs)
    sampler.draw_many.click()
    assert sampler.state["num_draws"] == 103 and sum(sampler.state["tally"].values()) == 103
    check_consistent(sampler, tok, paragraphs)
    # 103 pairs: the IsNext share is within 4 sd = 4 * sqrt(0.25 / 103) = 0.197 of 0.5
    assert abs(sampler.state["tally"]["IsNext"] / 103 - 0.5) < 0.197


def test_restart_goes_back_to_the_first_draw_of_the_seed(sampler, tok, paragraphs):
    sampler.draw_many.click()
    first_run = dict(sampler.state)
    sampler.restart()
    assert sampler.state["num_draws"] == 1 and sampler.state["labels"] == first_run["labels"][:1]
    sampler.draw_many.click()                          # the same clicks again: the same state
    assert sampler.state["labels"] == first_run["labels"] and sampler.state["message"] == first_run["message"]
    check_consistent(sampler, tok, paragraphs)
    for bad, error in ((0, ValueError), (-3, ValueError), (1.5, TypeError), ("2", TypeError)):
        with pytest.raises(error, match="^n must be"):
            sampler.draw_more(bad)
    assert sampler.state["labels"] == first_run["labels"]               # a refused draw changes nothing


def test_seed_starts_a_new_series(sampler, tok, paragraphs):
    sampler.draw_many.click()
    sampler.seed.value = 7
    assert sampler.state["num_draws"] == 1 and len(sampler.state["labels"]) == 1
    check_consistent(sampler, tok, paragraphs)
    seen = {sampler.state["sentence_a"]}
    for _ in range(5):
        sampler.draw_one.click()
        seen.add(sampler.state["sentence_a"])
    assert len(seen) > 1


def test_max_len_truncates_without_drawing(sampler, tok, paragraphs):
    sampler.draw_one.click()
    pair = (sampler.state["sentence_a"], sampler.state["sentence_b"])
    labels = sampler.state["labels"]
    sampler.max_len.value = 8
    s = sampler.state
    assert (s["sentence_a"], s["sentence_b"]) == pair and s["labels"] == labels
    assert len(s["tokens"]) <= 8 and sum(s["lengths_after"]) == len(s["tokens"]) - 3
    check_consistent(sampler, tok, paragraphs)
    if s["lengths_before"] != s["lengths_after"]:
        assert "Truncated to max_len=8" in s["message"]


def test_the_figure_is_an_inline_png(sampler):
    prefix = '<img src="data:image/png;base64,'
    value = sampler.output.value
    assert value.startswith(prefix)
    assert base64.b64decode(value[len(prefix):].split('"')[0])[:8] == b"\x89PNG\r\n\x1a\n"
    assert sampler.output in sampler.widget.children


def test_every_control_changes_what_is_shown(sampler):
    for change in (sampler.draw_one.click, sampler.draw_many.click,
                   lambda: setattr(sampler.seed, "value", 1),
                   lambda: setattr(sampler.max_len, "value", 33)):
        before = sampler.output.value
        change()
        assert sampler.output.value != before


def test_custom_paragraphs(tok):
    paragraphs = [["the cat sat .", "it slept ."], ["the dog ran .", "it barked .", "then it ate ."]]
    w = PairSampler(tok, paragraphs, seed=3, max_len=16)
    s = w.state
    assert (s["sentence_a"], s["sentence_b"], s["label"]) == sample_pair(paragraphs, 3, 0)[:3]
    assert s["sentence_a"] in {x for p in paragraphs for x in p[:-1]}
    assert s["max_len"] == 16 and s["seed"] == 3
