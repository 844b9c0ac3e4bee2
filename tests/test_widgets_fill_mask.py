"""The fill-mask playground: the pure function against a direct forward pass, the word
masking, the errors, and the widget's state and bars after setting its controls."""
import math

import pytest
import torch

from bertcourse.bert import BERTModel, get_config
from bertcourse.data import train_wordpiece
from bertcourse.pretrain import init_bert_weights
from bertcourse.inspection import MASK, encode_words, fill_mask, fill_mask_tokens, mask_word
from bertcourse.widgets.fill_mask import FillMaskPlayground, draw_fill_mask

SENTENCES = [
    "the capital of velora is tarnum.", "tarnum lies on the river osk.", "she works as a baker in tarnum.",
    "the capital of brisk is olm.", "olm is a big town by the sea.", "he plays football in olm.",
    "the fox is red and small.", "the bear eats fish in the river.",
] * 5


@pytest.fixture(scope="module")
def tokenizer():
    return train_wordpiece(SENTENCES, vocab_size=120)


@pytest.fixture(scope="module")
def model(tokenizer):
    torch.manual_seed(0)
    m = BERTModel(get_config("tiny", vocab_size=len(tokenizer.vocab), num_hiddens=32, ffn_num_hiddens=64))
    init_bert_weights(m, std=0.5)       # large weights: clearly non-uniform predictions
    return m.eval()


def direct_probs(model, tokenizer, tokens):
    """Softmax over the vocabulary at every [MASK], from a plain forward pass."""
    v = tokenizer.vocab
    ids = [v.cls_id, *v.to_ids(tokens), v.sep_id]
    x = torch.tensor([ids])
    positions = [i for i, t in enumerate(ids) if t == v.mask_id]
    with torch.no_grad():
        model.eval()
        _, logits, _ = model(x, torch.zeros_like(x), torch.tensor([len(ids)]), torch.tensor([positions]))
    return positions, torch.softmax(logits[0], -1)


def test_fill_mask_matches_a_direct_forward_pass(model, tokenizer):
    text = "the capital of [MASK] is [MASK]."
    out = fill_mask(model, tokenizer, text, top_k=4)
    tokens = tokenizer.tokenize(text)
    positions, probs = direct_probs(model, tokenizer, tokens)
    assert [p for p, _ in out] == positions == [4, 6]       # [CLS] the capital of [MASK] is [MASK] .
    for (pos, guesses), row in zip(out, probs):
        top_p, top_i = row.topk(4)
        assert [t for t, _ in guesses] == tokenizer.vocab.to_tokens(top_i.tolist())
        assert [p for _, p in guesses] == pytest.approx(top_p.tolist(), abs=1e-6)


def test_guesses_are_sorted_probabilities_summing_to_at_most_one(model, tokenizer):
    for k in (1, 3, 10):
        for pos, guesses in fill_mask(model, tokenizer, "[MASK] lies on the river [MASK].", top_k=k):
            probs = [p for _, p in guesses]
            assert len(probs) == k
            assert probs == sorted(probs, reverse=True)
            assert all(0 <= p <= 1 for p in probs) and sum(probs) <= 1 + 1e-6
    # top_k = vocabulary size: every token, the probabilities sum to 1
    (_, guesses), = fill_mask(model, tokenizer, "the [MASK] is red.", top_k=len(tokenizer.vocab))
    assert math.isclose(sum(p for _, p in guesses), 1.0, abs_tol=1e-4)
    assert len({t for t, _ in guesses}) == len(tokenizer.vocab)


def test_runs_in_eval_mode_and_restores_the_mode(model, tokenizer):
    model.train()
    try:
        a = fill_mask(model, tokenizer, "the [MASK] eats fish.", top_k=3)
        b = fill_mask(model, tokenizer, "the [MASK] eats fish.", top_k=3)
        assert a == b                       # no dropout noise
        assert model.training               # mode restored
    finally:
        model.eval()


def test_lower_case_mask_and_a_raw_hf_tokenizer_give_the_same_answer(model, tokenizer):
    a = fill_mask(model, tokenizer, "the capital of [MASK] is olm.")
    b = fill_mask(model, tokenizer.tokenizer, "The capital of [mask] is olm.")
    assert a == b


def test_encode_words_groups_pieces_and_mask_word_masks_all_of_them(tokenizer):
    tokens, words = encode_words(tokenizer, "the capital of velotar is tarnum.")
    assert tokens == tokenizer.tokenize("the capital of velotar is tarnum.")
    texts = [w for w, _, _ in words]
    assert texts == ["the", "capital", "of", "velotar", "is", "tarnum", "."]
    _, first, last = words[3]
    assert last > first                                     # a made-up word is split into pieces
    assert "".join(t.replace("##", "") for t in tokens[first:last + 1]) == "velotar"
    masked = mask_word(tokens, words, 3)
    assert masked[first:last + 1] == [MASK] * (last - first + 1)
    assert masked[:first] == tokens[:first] and masked[last + 1:] == tokens[last + 1:]
    # two [MASK]s side by side stay two blanks
    tokens, words = encode_words(tokenizer, "the [MASK][MASK] is red.")
    assert tokens.count(MASK) == 2 and [w for w, _, _ in words].count(MASK) == 2
    with pytest.raises(ValueError, match=r"index must be in 0..5 \(the text has 6 words\), got 7"):
        mask_word(tokens, words, 7)


def test_errors_name_the_problem(model, tokenizer):
    with pytest.raises(ValueError, match=r"at least one \[MASK\]"):
        fill_mask(model, tokenizer, "no blank here.")
    with pytest.raises(ValueError, match="top_k must be an int with 1 <= top_k, got 0"):
        fill_mask(model, tokenizer, "the [MASK].", top_k=0)
    with pytest.raises(TypeError, match="text must be a str"):
        fill_mask(model, tokenizer, ["the", "[MASK]"])
    with pytest.raises(TypeError, match="tokenizer must be a WordPieceTokenizer"):
        fill_mask(model, "bert-base-uncased", "the [MASK].")
    with pytest.raises(TypeError, match="model must be a bertcourse BERTModel"):
        fill_mask(torch.nn.Linear(2, 2), tokenizer, "the [MASK].")
    headless = BERTModel(model.config, with_heads=False)
    with pytest.raises(ValueError, match="no MLM head"):
        fill_mask(headless, tokenizer, "the [MASK].")
    with pytest.raises(ValueError, match="max_len=64"):
        fill_mask(model, tokenizer, "the fox " * 40 + "[MASK].")


def bar_widths(fig):
    """Per axes: the bar lengths, top bar first (bars are drawn bottom-up)."""
    return [[p.get_width() for p in ax.patches][::-1] for ax in fig.axes]


def test_draw_fill_mask_bars_are_the_probabilities(model, tokenizer):
    tokens = tokenizer.tokenize("the [MASK] lies on the [MASK].")
    preds = fill_mask_tokens(model, tokenizer, tokens, top_k=5)
    fig = draw_fill_mask(tokens, preds)
    assert len(fig.axes) == 2
    for widths, (_, guesses) in zip(bar_widths(fig), preds):
        assert widths == pytest.approx([p for _, p in guesses])
    for ax, (_, guesses) in zip(fig.axes, preds):
        assert [t.get_text() for t in ax.get_yticklabels()][::-1] == [t for t, _ in guesses]


def test_widget_follows_its_controls(model, tokenizer):
    w = FillMaskPlayground(model, tokenizer, text="the capital of [MASK] is olm.", top_k=3)
    expected = fill_mask(model, tokenizer, "the capital of [MASK] is olm.", top_k=3)
    assert w.state["predictions"] == expected and w.state["message"] is None
    assert bar_widths(w.figure) == [pytest.approx([p for _, p in expected[0][1]])]

    w.top_k.value = 7
    assert len(w.state["predictions"][0][1]) == 7
    assert len(w.figure.axes[0].patches) == 7

    # a new text refreshes the word list; choosing a word masks it
    w.text.value = "tarnum lies on the river osk."
    assert w.state["message"] is not None and w.state["predictions"] == []
    labels = [label for label, _ in w.word.options]
    assert labels[1:] == [f"{i}: {t}" for i, t in enumerate(["tarnum", "lies", "on", "the", "river", "osk", "."])]
    w.word.value = 4                                          # "river"
    tokens = tokenizer.tokenize("tarnum lies on the [MASK] osk.")
    assert w.state["tokens"] == tokens
    assert w.state["predictions"] == fill_mask_tokens(model, tokenizer, tokens, top_k=7)
    w.text.value = "velotar lies on the river osk."
    w.word.value = 0                                          # "velotar": all of its pieces
    n_pieces = len(tokenizer.tokenize("velotar"))
    assert n_pieces == 3
    assert w.state["tokens"][:n_pieces] == [MASK] * n_pieces
    assert len(w.state["predictions"]) == n_pieces

    w.text.value = "the fox " * 40 + "[MASK]."               # too long: a message, no exception
    assert "max_len" in w.state["message"]


def test_attention_maps_are_the_models_weights_and_settings_are_restored(model, tokenizer):
    from bertcourse.attention import store_attention_weights
    from bertcourse.inspection import attention_maps
    from bertcourse.widgets.fill_mask import draw_attention_grid
    store_attention_weights(model, False)
    model.train()
    try:
        pieces, segments, weights = attention_maps(model, tokenizer, "its capital is olm.", "olm is big.")
        assert model.training and all(not b.attention.attention.store_weights for b in model.encoder.blks)
    finally:
        model.eval()
        store_attention_weights(model, True)
    a, b = tokenizer.tokenize("its capital is olm."), tokenizer.tokenize("olm is big.")
    assert pieces == ["[CLS]", *a, "[SEP]", *b, "[SEP]"]
    assert segments == [0] * (len(a) + 2) + [1] * (len(b) + 1)
    n = len(pieces)
    assert weights.shape == (2, 2, n, n)
    assert torch.allclose(weights.sum(-1), torch.ones(2, 2, n), atol=1e-5)
    # the same weights as a plain eval-mode forward that keeps them
    ids = torch.tensor([tokenizer.vocab.to_ids(pieces)])
    with torch.no_grad():
        model.encoder(ids, torch.tensor([segments]))
    for l, blk in enumerate(model.encoder.blks):
        assert torch.allclose(weights[l], blk.attention.attention_weights[0])
    fig = draw_attention_grid(pieces, weights)
    assert len(fig.axes) == 4
    assert (fig.axes[3].images[0].get_array() == weights[1, 1].numpy()).all()
    with pytest.raises(ValueError, match=r"weights must have shape \(layers, heads, 3, 3\)"):
        draw_attention_grid(["a", "b", "c"], weights)
