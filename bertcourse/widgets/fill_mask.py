"""Chapter 7 widget: the fill-mask playground.

Type a sentence with one or more ``[MASK]``s (or pick a word to mask) and see the
model's top-k guesses for every blank, with their probabilities, as bar charts.

* :func:`fill_mask` — the pure computation: ``[CLS] tokens [SEP]`` through a course
  :class:`~bertcourse.bert.BERTModel` with an MLM head, softmax over the whole vocabulary
  at each ``[MASK]``, the ``top_k`` most probable tokens.
* :func:`mask_word` — the text's tokens with one word's pieces replaced by ``[MASK]``.
* :func:`draw_fill_mask` — one horizontal bar chart per blank.
* :class:`FillMaskPlayground` — the widget.

Works with the course's :class:`~bertcourse.data.WordPieceTokenizer` and with a plain
Hugging Face ``tokenizers.Tokenizer`` (chapter 8), as long as the vocabulary has the
BERT special tokens.
"""
from __future__ import annotations

import re

import ipywidgets as W
import torch
from matplotlib.figure import Figure

from ..bert import BERTModel
from ..data import WordPieceTokenizer
from . import FigureWidget
from .drawing import draw_message

__all__ = ["fill_mask", "encode_words", "mask_word", "fill_mask_tokens", "draw_fill_mask",
           "FillMaskPlayground", "attention_maps", "draw_attention_grid"]

MASK = "[MASK]"
MAX_MASKS_DRAWN = 4


def _hf_tokenizer(tokenizer):
    """The ``tokenizers.Tokenizer`` inside a course tokenizer (or the object itself)."""
    from tokenizers import Tokenizer
    if isinstance(tokenizer, WordPieceTokenizer):
        return tokenizer.tokenizer
    if isinstance(tokenizer, Tokenizer):
        return tokenizer
    raise TypeError(f"tokenizer must be a WordPieceTokenizer (bertcourse.data) or a tokenizers.Tokenizer, "
                    f"got {type(tokenizer).__name__}")


def _special_id(tok, token: str) -> int:
    i = tok.token_to_id(token)
    if i is None:
        raise ValueError(f"the tokenizer's vocabulary has no {token} token")
    return i


def _check_model(model) -> None:
    if not isinstance(model, BERTModel):
        raise TypeError(f"model must be a bertcourse BERTModel, got {type(model).__name__}")
    if model.mlm is None:
        raise ValueError("model has no MLM head (it was built with with_heads=False or loaded without "
                         "one): fill-mask needs the masked-language-model head")


def encode_words(tokenizer, text: str) -> tuple[list, list]:
    """Split ``text`` into WordPiece tokens and group them by word.

    Returns ``(tokens, words)``: ``tokens`` the list of token strings (``[MASK]`` typed
    in any case stays one token), ``words`` a list of ``(word_text, first, last)``:
    the word as written and the token indices ``first..last`` (inclusive) of its pieces.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    tok = _hf_tokenizer(tokenizer)
    text = re.sub(r"\[mask\]", MASK, text, flags=re.IGNORECASE)
    enc = tok.encode(text, add_special_tokens=False)
    spans = []                        # [first_char, end_char, first_token, last_token]
    for i, (w, (a, b)) in enumerate(zip(enc.word_ids, enc.offsets)):
        same_word = (i > 0 and w is not None and w == enc.word_ids[i - 1]
                     and MASK not in (enc.tokens[i], enc.tokens[i - 1]))
        if same_word:
            spans[-1][1], spans[-1][3] = b, i
        else:
            spans.append([a, b, i, i])
    return list(enc.tokens), [(text[a:b], first, last) for a, b, first, last in spans]


def mask_word(tokens: list, words: list, index: int) -> list:
    """``tokens`` with every piece of word ``index`` replaced by ``[MASK]`` (a word that
    WordPiece splits into 3 pieces becomes 3 blanks)."""
    if not 0 <= index < len(words):
        raise ValueError(f"index must be in 0..{len(words) - 1} (the text has {len(words)} words), got {index}")
    _, first, last = words[index]
    return [MASK if first <= i <= last else t for i, t in enumerate(tokens)]


@torch.no_grad()
def fill_mask_tokens(model: BERTModel, tokenizer, tokens: list, top_k: int = 5) -> list:
    """:func:`fill_mask` for a list of token strings (without ``[CLS]``/``[SEP]``)."""
    _check_model(model)
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
        raise ValueError(f"top_k must be an int >= 1, got {top_k!r}")
    tok = _hf_tokenizer(tokenizer)
    ids = [tok.token_to_id(t) for t in tokens]
    unk = _special_id(tok, "[UNK]")
    ids = [unk if i is None else i for i in ids]
    ids = [_special_id(tok, "[CLS]"), *ids, _special_id(tok, "[SEP]")]
    mask_id = _special_id(tok, MASK)
    positions = [i for i, t in enumerate(ids) if t == mask_id]
    if not positions:
        raise ValueError("text must contain at least one [MASK] (or mask a word) to fill in")
    if len(ids) > model.config.max_len:
        raise ValueError(f"text has {len(ids)} tokens with [CLS] and [SEP], but the model takes at most "
                         f"max_len={model.config.max_len}: shorten it")
    vocab = model.config.vocab_size
    top_k = min(top_k, vocab)
    was_training = model.training
    model.eval()                       # no dropout: the same text always gives the same answer
    try:
        x = torch.tensor([ids])
        _, logits, _ = model(x, torch.zeros_like(x), torch.tensor([len(ids)]), torch.tensor([positions]))
    finally:
        model.train(was_training)
    probs = torch.softmax(logits[0].float(), dim=-1)               # (num_masks, vocab)
    top_p, top_i = probs.topk(top_k, dim=-1)
    out = []
    for pos, p_row, i_row in zip(positions, top_p.tolist(), top_i.tolist()):
        out.append((pos, [(tok.id_to_token(i) or "[UNK]", p) for i, p in zip(i_row, p_row)]))
    return out


def fill_mask(model: BERTModel, tokenizer, text: str, top_k: int = 5) -> list:
    """The model's ``top_k`` guesses for every ``[MASK]`` in ``text``.

    Returns a list with one entry per ``[MASK]``, left to right: ``(position, [(token,
    probability), ...])``, where ``position`` is the index in the model's input
    ``[CLS] tokens [SEP]`` (so ``[CLS]`` is 0) and the guesses are sorted by
    probability (softmax over the whole vocabulary, so they sum to at most 1). The model
    runs in ``eval()`` mode (its mode is restored afterwards).
    """
    tokens, _ = encode_words(tokenizer, text)
    return fill_mask_tokens(model, tokenizer, tokens, top_k)


def _filled_text(tokens: list, predictions: list) -> str:
    """The input with every blank replaced by the top guess (shown as ``[guess]``)."""
    out = list(tokens)
    for pos, guesses in predictions:
        out[pos - 1] = f"[{guesses[0][0]}]"
    return " ".join(out).replace(" ##", "").replace(" .", ".").replace(" ,", ",")


def draw_fill_mask(tokens: list, predictions: list, title: str = "") -> Figure:
    """One horizontal bar chart per blank (at most 4): the top-k tokens and their
    probabilities, the most probable on top. ``tokens`` are the input tokens (with the
    ``[MASK]``s, without ``[CLS]``/``[SEP]``), ``predictions`` from :func:`fill_mask`."""
    shown = predictions[:MAX_MASKS_DRAWN]
    n = max(len(shown), 1)
    k = max((len(g) for _, g in shown), default=1)
    fig = Figure(figsize=(3.4 * n + 1.0, 0.38 * k + 1.6))
    axes = fig.subplots(1, n, squeeze=False)[0]
    for ax, (pos, guesses) in zip(axes, shown):
        labels = [t for t, _ in guesses][::-1]
        probs = [p for _, p in guesses][::-1]
        ax.barh(range(len(probs)), probs, color=["#1f77b4"] * (len(probs) - 1) + ["#d62728"])
        ax.set_yticks(range(len(labels)), labels)
        ax.set_xlim(0, 1)
        ax.set_xlabel("probability")
        ax.set_title(f"blank at position {pos}", fontsize=10)
        for y, p in enumerate(probs):
            ax.text(min(p + 0.02, 0.8), y, f"{p:.2f}", va="center", fontsize=8)
    head = _filled_text(tokens, predictions)
    more = f"  (+{len(predictions) - MAX_MASKS_DRAWN} more blanks)" if len(predictions) > MAX_MASKS_DRAWN else ""
    fig.suptitle((title + "\n" if title else "") + head + more, fontsize=10)
    fig.tight_layout()
    return fig


@torch.no_grad()
def attention_maps(model: BERTModel, tokenizer, text_a: str, text_b: str | None = None):
    """Every attention map of ``model`` for ``[CLS] A [SEP] (B [SEP])``.

    Returns ``(pieces, segments, weights)``: the tokens, their segment ids and a
    ``(layers, heads, seq, seq)`` tensor; ``weights[l, h, i, j]`` is how much token ``i``
    attends to token ``j`` in head ``h`` of block ``l`` (0-based). Runs in ``eval()``
    mode with the weights kept, and puts both settings back afterwards.
    """
    from ..attention import DotProductAttention
    from ..bert import get_tokens_and_segments
    if not isinstance(model, BERTModel):
        raise TypeError(f"model must be a bertcourse BERTModel, got {type(model).__name__}")
    tok = _hf_tokenizer(tokenizer)
    for name, text in (("text_a", text_a), ("text_b", text_b)):
        if text is not None and not isinstance(text, str):
            raise TypeError(f"{name} must be a str, got {type(text).__name__}")
    a = tok.encode(text_a, add_special_tokens=False).tokens
    b = None if text_b is None else tok.encode(text_b, add_special_tokens=False).tokens
    pieces, segments = get_tokens_and_segments(a, b)
    if len(pieces) > model.config.max_len:
        raise ValueError(f"the pair has {len(pieces)} tokens, more than max_len={model.config.max_len}")
    ids = torch.tensor([[tok.token_to_id(p) if tok.token_to_id(p) is not None else _special_id(tok, "[UNK]")
                         for p in pieces]])
    attns = [m for m in model.modules() if isinstance(m, DotProductAttention)]
    previous, was_training = [m.store_weights for m in attns], model.training
    try:
        for m in attns:
            m.store_weights = True
        model.eval()
        model.encoder(ids, torch.tensor([segments]))
        weights = torch.stack([blk.attention.attention_weights[0] for blk in model.encoder.blks])
    finally:
        for m, on in zip(attns, previous):
            m.store_weights = on
        model.train(was_training)
    return pieces, segments, weights


def draw_attention_grid(pieces: list, weights: torch.Tensor, title: str = "") -> Figure:
    """Every head's ``(queries, keys)`` weights as a heatmap: one row of panels per layer,
    one column per head (``fig.axes[l * heads + h].images[0]`` is ``weights[l, h]``)."""
    layers, heads, n, _ = weights.shape
    if n != len(pieces):
        raise ValueError(f"weights must have shape (layers, heads, {len(pieces)}, {len(pieces)}) for "
                         f"{len(pieces)} tokens, got {tuple(weights.shape)}")
    size = max(3.0, 0.2 * n + 1.0)
    fig = Figure(figsize=(size * heads + 0.5, size * layers + 0.3))
    axes = fig.subplots(layers, heads, squeeze=False)
    for l in range(layers):
        for h in range(heads):
            ax = axes[l][h]
            ax.imshow(weights[l, h].numpy(), cmap="Blues", vmin=0.0, vmax=1.0)
            ax.set_xticks(range(n), pieces, rotation=90, fontsize=7)
            ax.set_yticks(range(n), pieces, fontsize=7)
            ax.set_title(f"layer {l + 1}, head {h + 1}", fontsize=9)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


class FillMaskPlayground(FigureWidget):
    """Text with ``[MASK]``s (or a word chosen to mask) + top-k -> bar charts of guesses.

    ``state`` keys: ``tokens`` (the input tokens after masking), ``words`` (the words of
    the text, for the dropdown), ``masked_word`` (index or -1), ``top_k``,
    ``predictions`` (as :func:`fill_mask` returns them) and ``message`` (why nothing is
    shown, else None).
    """

    def __init__(self, model: BERTModel, tokenizer, text: str = "the capital of [MASK] is a big town.",
                 top_k: int = 5):
        _check_model(model)
        _hf_tokenizer(tokenizer)
        self.model, self.tokenizer = model, tokenizer
        style = {"description_width": "110px"}
        self.text = W.Text(value=text, description="sentence", continuous_update=False, style=style,
                           layout=W.Layout(width="640px"))
        self.word = W.Dropdown(options=[("(use the [MASK]s in the sentence)", -1)], value=-1,
                               description="mask a word", style=style, layout=W.Layout(width="420px"))
        self.top_k = W.IntSlider(value=top_k, min=1, max=10, description="top k", style=style)
        self._busy = False
        self._refresh_words()
        super().__init__([self.text, self.word, self.top_k])
        self.widget = W.VBox([self.text, W.HBox([self.word, self.top_k]), self.output])

    def _refresh_words(self) -> None:
        _, words = encode_words(self.tokenizer, self.text.value)
        self.word.options = [("(use the [MASK]s in the sentence)", -1)] + [
            (f"{i}: {w}", i) for i, (w, _, _) in enumerate(words) if w != MASK]
        self.word.value = -1

    def _on_change(self, change) -> None:
        if self._busy:
            return
        self._busy = True
        try:
            if change["owner"] is self.text:
                self._refresh_words()
        finally:
            self._busy = False
        self.update()

    def compute(self) -> dict:
        tokens, words = encode_words(self.tokenizer, self.text.value)
        state = {"words": [w for w, _, _ in words], "masked_word": self.word.value, "top_k": self.top_k.value,
                 "tokens": tokens, "predictions": [], "message": None}
        if self.word.value is not None and self.word.value >= 0:
            tokens = mask_word(tokens, words, self.word.value)
            state["tokens"] = tokens
        if MASK not in tokens:
            state["message"] = "Type [MASK] somewhere in the sentence, or choose a word to mask."
            return state
        try:
            state["predictions"] = fill_mask_tokens(self.model, self.tokenizer, tokens, self.top_k.value)
        except ValueError as e:
            state["message"] = str(e)
        return state

    def draw(self, state: dict) -> Figure:
        if state["message"]:
            return draw_message(state["message"], width=9)
        return draw_fill_mask(state["tokens"], state["predictions"])
