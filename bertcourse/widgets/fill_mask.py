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

import ipywidgets as W
import torch
from matplotlib.figure import Figure

from .._checks import check_int, check_tensor
from ..inspection import MASK, attention_maps, check_mlm_model, encode_words, fill_mask, fill_mask_tokens, mask_word
from ..bert import BERTModel
from ..i18n import gettext as _, gettext_noop as N_
from ..wordpiece import hf_tokenizer
from . import FigureWidget
from .drawing import draw_heatmap, draw_message

NO_MASK = N_("Type [MASK] somewhere in the sentence, or choose a word to mask.")

__all__ = ["fill_mask", "encode_words", "mask_word", "fill_mask_tokens", "draw_fill_mask",
           "FillMaskPlayground", "attention_maps", "draw_attention_grid"]

MAX_MASKS_DRAWN = 4


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
        ax.set_xlabel(_("probability"))
        ax.set_title(_("blank at position {pos}").format(pos=pos), fontsize=10)
        for y, p in enumerate(probs):
            ax.text(min(p + 0.02, 0.8), y, f"{p:.2f}", va="center", fontsize=8)
    head = _filled_text(tokens, predictions)
    more = (_("  (+{n} more blanks)").format(n=len(predictions) - MAX_MASKS_DRAWN)
            if len(predictions) > MAX_MASKS_DRAWN else "")
    fig.suptitle((title + "\n" if title else "") + head + more, fontsize=10)
    fig.tight_layout()
    return fig


def draw_attention_grid(pieces: list, weights: torch.Tensor, title: str = "") -> Figure:
    """Every head's ``(queries, keys)`` weights as a heatmap: one row of panels per layer,
    one column per head (``fig.axes[l * heads + h].images[0]`` is ``weights[l, h]``)."""
    check_tensor("weights", weights, ndim=4, expected=f"(layers, heads, {len(pieces)}, {len(pieces)})",
                 floating=True)
    layers, heads, n, _n = weights.shape
    if n != len(pieces):
        raise ValueError(f"weights must have shape (layers, heads, {len(pieces)}, {len(pieces)}) for "
                         f"{len(pieces)} tokens, got {tuple(weights.shape)}")
    size = max(3.0, 0.2 * n + 1.0)
    fig = Figure(figsize=(size * heads + 0.5, size * layers + 0.3))
    axes = fig.subplots(layers, heads, squeeze=False)
    for l in range(layers):
        for h in range(heads):
            # small panels: no axis names and no colour bars, the scale is 0..1 in every one
            draw_heatmap(axes[l][h], weights[l, h], pieces, pieces, fontsize=7, rotation=90, xlabel="", ylabel="",
                         title=_("layer {layer}, head {head}").format(layer=l + 1, head=h + 1), title_size=9,
                         colorbar=None)
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
        check_int("top_k", top_k, low=1, high=10)     # the slider's range
        check_mlm_model(model)
        hf_tokenizer(tokenizer)
        self.model, self.tokenizer = model, tokenizer
        style = {"description_width": "110px"}
        self.text = W.Text(value=text, description=_("sentence"), continuous_update=False, style=style,
                           layout=W.Layout(width="640px"))
        self.word = W.Dropdown(options=[(_("(use the [MASK]s in the sentence)"), -1)], value=-1,
                               description=_("mask a word"), style=style, layout=W.Layout(width="420px"))
        self.top_k = W.IntSlider(value=top_k, min=1, max=10, description=_("top k"), style=style)
        self._refresh_words()
        super().__init__([self.text, self.word, self.top_k])
        self.widget = W.VBox([self.text, W.HBox([self.word, self.top_k]), self.output])

    def _refresh_words(self) -> None:
        _tokens, words = encode_words(self.tokenizer, self.text.value)
        self.word.options = [(_("(use the [MASK]s in the sentence)"), -1)] + [
            (f"{i}: {w}", i) for i, (w, _, _) in enumerate(words) if w != MASK]
        self.word.value = -1

    def link(self, change) -> None:
        if change["owner"] is self.text:
            self._refresh_words()

    def compute(self) -> dict:
        tokens, words = encode_words(self.tokenizer, self.text.value)
        state = {"words": [w for w, _, _ in words], "masked_word": self.word.value, "top_k": self.top_k.value,
                 "tokens": tokens, "predictions": [], "message": None}
        if self.word.value is not None and self.word.value >= 0:
            tokens = mask_word(tokens, words, self.word.value)
            state["tokens"] = tokens
        if MASK not in tokens:
            state["message"] = _(NO_MASK)
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
