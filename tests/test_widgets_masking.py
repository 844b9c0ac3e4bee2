"""Headless tests of the masking explorer (bertcourse.widgets.masking)."""
import base64
import math

import matplotlib
import numpy as np
import pytest
from figures import bar_heights, plain_texts, token_boxes
import torch
from matplotlib.colors import to_rgba

matplotlib.use("Agg")

from bertcourse.data import (SPECIAL_TOKENS, Vocab, draw_generator, generate_corpus, get_tokenizer,  # noqa: E402
                             mask_tokens, num_mlm_preds)
from bertcourse.widgets.drawing import ROW_WIDTH, token_layout  # noqa: E402
from bertcourse.widgets.masking import (CHOSEN, COLOURS, MAX_TOKENS, OUTCOMES,  # noqa: E402
                                        MaskingExplorer, chosen_shares, classify_masking,
                                        corpus_sentences, count_outcomes, draw_masking,
                                        encode_text, mask_once, running_counts)


@pytest.fixture(scope="module")
def tok():
    return get_tokenizer(0)


def toy_vocab(size=20):
    return Vocab(list(SPECIAL_TOKENS) + [f"w{i}" for i in range(5, size)])



# --- pure functions --------------------------------------------------------------------

def test_corpus_sentences_are_long_held_out_sentences():
    sentences = corpus_sentences()
    assert len(sentences) == 8 and len(set(sentences)) == 8
    held_out = set(generate_corpus(0).sentences("held_out"))
    assert all(s in held_out and len(s.split()) >= 8 for s in sentences)
    assert corpus_sentences() == sentences                      # deterministic
    longer = corpus_sentences(3, min_words=10)
    assert len(longer) == 3 and all(len(s.split()) >= 10 for s in longer)


def test_encode_text(tok):
    tokens, ids, n = encode_text("The capital of velora is tarnum.", tok)
    pieces = tok.tokenize("The capital of velora is tarnum.")
    assert tokens == ["[CLS]", *pieces, "[SEP]"] and n == len(pieces)
    assert ids == tok.vocab.to_ids(tokens)
    long_tokens, long_ids, n_long = encode_text("the cat " * 40, tok)
    assert len(long_tokens) == len(long_ids) == MAX_TOKENS and n_long == 80
    assert long_tokens[0] == "[CLS]" and long_tokens[-1] == "[SEP]"
    assert encode_text("", tok)[0] == ["[CLS]", "[SEP]"]
    with pytest.raises(TypeError, match="text must be a str, got int"):
        encode_text(3, tok)
    with pytest.raises(TypeError, match="tokenizer must be a WordPieceTokenizer"):
        encode_text("a", tok.vocab)
    with pytest.raises(ValueError, match="max_tokens must be an int >= 3"):
        encode_text("a", tok, max_tokens=2)


def test_draw_generator_repeats_and_differs():
    a = torch.rand(5, generator=draw_generator(3, 7))
    assert torch.equal(a, torch.rand(5, generator=draw_generator(3, 7)))
    assert not torch.equal(a, torch.rand(5, generator=draw_generator(3, 8)))
    assert not torch.equal(a, torch.rand(5, generator=draw_generator(4, 7)))
    with pytest.raises(ValueError, match="seed must be >= 0, got -1"):
        draw_generator(-1, 0)
    with pytest.raises(TypeError, match=r"draw must be an int, got float \(1.5\)"):
        draw_generator(0, 1.5)


def test_classify_masking_by_hand():
    v = toy_vocab()
    original = [2, 7, 8, 9, 10, 11, 3, 0]
    masked = [2, 4, 8, 15, 10, 11, 3, 0]
    assert classify_masking(original, masked, [1, 3, 4], v) == \
        ["special", "[MASK]", "not chosen", "random", "kept", "not chosen", "special", "special"]
    # tensors work too
    assert classify_masking(torch.tensor(original), torch.tensor(masked), torch.tensor([1, 3, 4]), v)[3] == "random"


def test_classify_masking_errors():
    v = toy_vocab()
    with pytest.raises(ValueError, match="same length"):
        classify_masking([2, 7, 3], [2, 7], [1], v)
    with pytest.raises(ValueError, match=r"pred_positions must lie in \[0, seq=3\)"):
        classify_masking([2, 7, 3], [2, 4, 3], [3], v)
    with pytest.raises(ValueError, match="position 1 was not chosen but changed"):
        classify_masking([2, 7, 3], [2, 4, 3], [], v)
    with pytest.raises(TypeError, match="vocab must be a Vocab"):
        classify_masking([2, 7, 3], [2, 4, 3], [1], ["[PAD]"])


def test_mask_once_is_mask_tokens_with_the_draws_generator(tok):
    tokens, ids, _ = encode_text(corpus_sentences()[3], tok)
    for draw in range(5):
        got = mask_once(ids, tok.vocab, 0.3, seed=2, draw=draw)
        ref = mask_tokens(ids, tok.vocab, 0.3, generator=draw_generator(2, draw))
        assert got["ids"] == ref.ids.tolist() and got["pred_positions"] == ref.pred_positions.tolist()
        counts = count_outcomes(got["outcomes"])
        n_candidates = len(ids) - 2
        assert sum(counts[o] for o in CHOSEN) == num_mlm_preds(n_candidates, 0.3)
        assert counts["special"] == 2 and counts["not chosen"] == n_candidates - num_mlm_preds(n_candidates, 0.3)
        for i, o in enumerate(got["outcomes"]):
            if o == "[MASK]":
                assert got["ids"][i] == tok.vocab.mask_id
            elif o in ("kept", "not chosen", "special"):
                assert got["ids"][i] == ids[i]
            else:
                assert got["ids"][i] not in (ids[i], tok.vocab.mask_id)


def test_count_outcomes_and_shares():
    counts = count_outcomes(["[MASK]", "[MASK]", "kept", "not chosen", "special", "random", "[MASK]", "[MASK]"])
    assert counts == {"[MASK]": 4, "random": 1, "kept": 1, "not chosen": 1, "special": 1}
    assert chosen_shares(counts) == pytest.approx({"[MASK]": 4 / 6, "random": 1 / 6, "kept": 1 / 6})
    assert chosen_shares(count_outcomes([])) == {"[MASK]": 0.0, "random": 0.0, "kept": 0.0}
    with pytest.raises(ValueError, match="unknown outcome 'masked'"):
        count_outcomes(["masked"])


def test_running_counts_sum_the_draws(tok):
    _, ids, _ = encode_text(corpus_sentences()[0], tok)
    total = running_counts(ids, tok.vocab, 0.15, 1, 7)
    by_hand = dict.fromkeys(OUTCOMES, 0)
    for d in range(7):
        for k, v in count_outcomes(mask_once(ids, tok.vocab, 0.15, 1, d)["outcomes"]).items():
            by_hand[k] += v
    assert total == by_hand
    assert sum(total.values()) == 7 * len(ids)


def test_running_shares_approach_80_10_10(tok):
    """3,000 draws of a corpus sentence with 11 candidates (2 chosen each): 6,000 chosen
    tokens. Binomial sd of a 10 % share: sqrt(0.1 * 0.9 / 6000) = 0.0039; tolerance 0.016
    (4 sd). The "random" share is 0.1 * (1 - 1/2995): a random token can be the original."""
    _, ids, _ = encode_text(corpus_sentences()[0], tok)
    counts = running_counts(ids, tok.vocab, 0.15, 0, 3000)
    n = sum(counts[o] for o in CHOSEN)
    assert n == 3000 * num_mlm_preds(len(ids) - 2) == 6000
    shares = chosen_shares(counts)
    pool = len(tok.vocab) - len(SPECIAL_TOKENS)
    expected = {"[MASK]": 0.8, "random": 0.1 * (1 - 1 / pool), "kept": 0.1 + 0.1 / pool}
    for o in CHOSEN:
        sd = math.sqrt(expected[o] * (1 - expected[o]) / n)
        assert abs(shares[o] - expected[o]) < 4 * sd, (o, shares[o])


def test_draw_masking_figure_data():
    tokens = ["[CLS]", "the", "cat", "sat", "on", "the", "mat", "[SEP]"]
    masked = ["[CLS]", "[MASK]", "cat", "dog", "on", "the", "mat", "[SEP]"]
    outcomes = ["special", "[MASK]", "not chosen", "random", "kept", "not chosen", "not chosen", "special"]
    running = {"[MASK]": 8, "random": 1, "kept": 1, "not chosen": 30, "special": 20}
    fig = draw_masking(tokens, masked, outcomes, running, title="hello")
    assert [t for t, _ in token_boxes(fig)] == masked
    assert [c for _, c in token_boxes(fig)] == [to_rgba(COLOURS[o]) for o in outcomes]
    assert plain_texts(fig) == tokens
    np.testing.assert_allclose(bar_heights(fig), [0.8, 0.1, 0.1])
    assert fig.axes[0].get_title(loc="left") == "hello"
    legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert legend == ["[MASK]: 1", "random: 1", "kept: 1", "not chosen: 3", "special: 2"]
    # without running counts the bars show this draw
    np.testing.assert_allclose(bar_heights(draw_masking(tokens, masked, outcomes)), [1 / 3] * 3)
    # long inputs wrap onto several rows, as token_layout says: 40 boxes of 3 + 2 characters
    # in rows of 96 -> 19 per row -> 3 rows, each with an "original" line and a box line
    fig = draw_masking(["w"] * 40, ["w"] * 40, ["not chosen"] * 40)
    assert len({t.get_position()[1] for t in fig.axes[0].texts}) == 2 * 3
    assert fig.axes[0].get_xlim() == (0, ROW_WIDTH)


def test_token_layout():
    assert token_layout([3, 5, 1]) == [(0, 2.5), (0, 8.5), (0, 13.5)]      # spans 5, 7, 3
    # a box that does not fit starts a new row; a box wider than a row gets its own row
    assert token_layout([6, 6, 6], row_width=16) == [(0, 4.0), (0, 12.0), (1, 4.0)]
    assert token_layout([2, 30, 2], row_width=16) == [(0, 2.0), (1, 16.0), (2, 2.0)]
    layout = token_layout([3] * 40)
    assert [r for r, _ in layout].count(0) == ROW_WIDTH // 5 and layout[-1][0] == 2
    assert all(0 < x < ROW_WIDTH for _, x in layout)
    assert token_layout([]) == []
    with pytest.raises(ValueError, match="widths must be ints >= 0, got -1"):
        token_layout([3, -1])


def test_draw_masking_errors():
    with pytest.raises(ValueError, match="same length > 0"):
        draw_masking(["a", "b"], ["a"], ["kept"])
    with pytest.raises(ValueError, match="same length > 0"):
        draw_masking([], [], [])


# --- the widget -------------------------------------------------------------------------

@pytest.fixture
def explorer(tok):
    w = MaskingExplorer(tok)
    yield w
    import matplotlib.pyplot as plt
    plt.close("all")


def check_consistent(w, tok):
    """The state is what the pure functions give for the widget's settings."""
    s = w.state
    tokens, ids, _ = encode_text(w.text.value, tok)
    assert s["tokens"] == tokens and s["ids"] == ids
    last = mask_once(ids, tok.vocab, s["mask_prob"], s["seed"], s["num_draws"] - 1)
    assert s["outcomes"] == last["outcomes"] and s["pred_positions"] == last["pred_positions"]
    assert s["masked_tokens"] == tok.vocab.to_tokens(last["ids"])
    assert s["counts"] == count_outcomes(last["outcomes"])
    assert s["running"] == running_counts(ids, tok.vocab, s["mask_prob"], s["seed"], s["num_draws"])
    assert s["shares"] == chosen_shares(s["running"])
    np.testing.assert_allclose(bar_heights(w.figure), [s["shares"][o] for o in CHOSEN])
    assert [t for t, _ in token_boxes(w.figure)] == s["masked_tokens"]
    assert w.info.value == f"<b>{s['message']}</b>"


def test_initial_state(explorer, tok):
    s = explorer.state
    assert explorer.text.value == corpus_sentences()[0] == explorer.sentence.value
    assert s["mask_prob"] == 0.15 and s["seed"] == 0 and s["num_draws"] == 1
    assert s["running"] == s["counts"]
    check_consistent(explorer, tok)
    assert "draw 0 of seed 0" in s["message"]


def test_resample_buttons_accumulate_counts(explorer, tok):
    before = explorer.output.value
    explorer.resample.click()
    assert explorer.state["num_draws"] == 2
    assert explorer.output.value != before                  # the title names the draw
    check_consistent(explorer, tok)
    explorer.resample_many.click()
    assert explorer.state["num_draws"] == 102
    check_consistent(explorer, tok)
    n = sum(explorer.state["running"][o] for o in CHOSEN)
    assert n == 102 * num_mlm_preds(len(explorer.state["ids"]) - 2)
    assert f"Running over 102 draws: {n} chosen" in explorer.state["message"]


def test_restart_goes_back_to_the_first_draw_of_the_setting(explorer, tok):
    explorer.resample_many.click()
    first_run = dict(explorer.state)
    explorer.restart()
    assert explorer.state["num_draws"] == 1
    explorer.resample_many.click()                     # the same clicks again: the same state
    assert explorer.state["running"] == first_run["running"]
    assert explorer.state["message"] == first_run["message"]
    check_consistent(explorer, tok)
    for bad, error in ((0, ValueError), (-3, ValueError), (1.5, TypeError), ("2", TypeError)):
        with pytest.raises(error, match="^n must be"):
            explorer.draw_more(bad)
    assert explorer.state["running"] == first_run["running"]          # a refused draw changes nothing


def test_changing_a_setting_starts_the_count_again(explorer, tok):
    explorer.resample_many.click()
    explorer.mask_prob.value = 0.4
    assert explorer.state["num_draws"] == 1 and explorer.state["mask_prob"] == 0.4
    check_consistent(explorer, tok)
    assert sum(explorer.state["counts"][o] for o in CHOSEN) == num_mlm_preds(len(explorer.state["ids"]) - 2, 0.4)
    explorer.resample.click()
    explorer.seed.value = 5
    assert explorer.state["num_draws"] == 1 and explorer.state["seed"] == 5
    check_consistent(explorer, tok)
    explorer.resample.click()
    explorer.sentence.value = corpus_sentences()[4]
    assert explorer.text.value == corpus_sentences()[4] and explorer.state["num_draws"] == 1
    check_consistent(explorer, tok)


def test_seeds_give_different_draws(explorer):
    seen = set()
    for seed in range(1, 4):
        explorer.seed.value = seed
        seen.add(tuple(explorer.state["pred_positions"]))
    assert len(seen) > 1


def test_typed_text(explorer, tok):
    explorer.text.value = "The capital of Velora is Tarnum and its river is the Osk."
    assert explorer.state["tokens"][:4] == ["[CLS]", "the", "capital", "of"]
    check_consistent(explorer, tok)
    explorer.text.value = "the cat " * 40
    assert len(explorer.state["tokens"]) == MAX_TOKENS
    assert f"Showing the first {MAX_TOKENS - 2} of 80 tokens" in explorer.state["message"]
    check_consistent(explorer, tok)


@pytest.mark.parametrize("text", ["", "   ", "[MASK] [SEP]"])
def test_nothing_to_mask_shows_a_message_and_recovers(explorer, tok, text):
    explorer.text.value = text
    s = explorer.state
    assert s["outcomes"] is None and s["running"] is None
    assert "Type at least one word" in s["message"]
    assert "Type at least one word" in explorer.figure.axes[0].texts[0].get_text()
    explorer.resample.click()                    # the other controls do not crash either
    explorer.mask_prob.value = 0.3
    assert explorer.state["outcomes"] is None
    explorer.text.value = "the cat sat on the mat"
    assert explorer.state["num_draws"] == 1
    check_consistent(explorer, tok)


def test_the_figure_is_an_inline_png(explorer):
    prefix = '<img src="data:image/png;base64,'
    value = explorer.output.value
    assert value.startswith(prefix)
    assert base64.b64decode(value[len(prefix):].split('"')[0])[:8] == b"\x89PNG\r\n\x1a\n"
    assert explorer.output in explorer.widget.children


def test_every_control_changes_what_is_shown(explorer):
    """What the browser test does: each control, changed once, changes the display."""
    for change in (lambda: explorer.sentence.__setattr__("value", corpus_sentences()[2]),
                   lambda: explorer.text.__setattr__("value", explorer.text.value + " again"),
                   lambda: explorer.mask_prob.__setattr__("value", 0.16),
                   lambda: explorer.seed.__setattr__("value", 1),
                   explorer.resample.click, explorer.resample_many.click):
        before = (explorer.output.value, explorer.info.value)
        change()
        after = (explorer.output.value, explorer.info.value)
        assert after[0] != before[0] and after[1] != before[1]
