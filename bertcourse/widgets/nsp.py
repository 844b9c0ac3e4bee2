"""Chapter 6 widget: the pair sampler.

Press *draw* to make one next-sentence-prediction example the way pretraining does
(:func:`bertcourse.data.make_nsp_pair`): a random sentence A of the course corpus, and as
sentence B either the sentence that really follows it (**IsNext**, label 0) or a random
sentence of another paragraph (**NotNext**, label 1) — Hugging Face's label convention.
The pair is shown as BERT reads it, ``[CLS] A [SEP] B [SEP]``, coloured by segment, and
truncated to ``max_len`` with :func:`bertcourse.data.truncate_pair` (the longer sentence
loses its last tokens first).

A running tally counts IsNext and NotNext over the draws of the current seed: it heads for
50 / 50. Draw ``d`` of seed ``s`` is always the same pair, so changing the seed starts a
new series (and a new tally); changing ``max_len`` only re-truncates the pair shown.

Pure functions (tested directly): :func:`bertcourse.data.sample_pair`,
:func:`pair_tokens`, :func:`label_name`, :func:`tally`. Draw function:
:func:`draw_pair`. Widget: :class:`PairSampler`.
"""
from __future__ import annotations

import html

import ipywidgets as W
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from .._checks import check_int
from ..bert import get_tokens_and_segments
from ..data import (IS_NEXT, NOT_NEXT, WordPieceTokenizer, generate_corpus, get_tokenizer, sample_pair,
                    truncate_pair)
from ..i18n import gettext as _
from . import RepeatedDraws
from .drawing import ROW_WIDTH, SEGMENT_COLOURS, draw_tally, token_layout

__all__ = ["SEGMENT_COLOURS", "LABEL_NAMES", "pair_tokens", "label_name",
           "tally", "draw_pair", "PairSampler"]

LABEL_NAMES = {IS_NEXT: "IsNext", NOT_NEXT: "NotNext"}


def pair_tokens(sentence_a: str, sentence_b: str, tokenizer: WordPieceTokenizer, max_len: int):
    """``[CLS] A [SEP] B [SEP]`` after truncation to ``max_len``.

    Returns ``(tokens, segments, lengths_before, lengths_after)``, the lengths being
    ``(len(A), len(B))`` in WordPiece tokens.
    """
    if not isinstance(tokenizer, WordPieceTokenizer):
        raise TypeError(f"tokenizer must be a WordPieceTokenizer, got {type(tokenizer).__name__}")
    for name, sentence in (("sentence_a", sentence_a), ("sentence_b", sentence_b)):
        if not isinstance(sentence, str):
            raise TypeError(f"{name} must be a str, got {type(sentence).__name__}")
    ta, tb = tokenizer.tokenize(sentence_a), tokenizer.tokenize(sentence_b)
    a, b = truncate_pair(ta, tb, max_len)
    tokens, segments = get_tokens_and_segments(a, b)
    return tokens, segments, (len(ta), len(tb)), (len(a), len(b))


def label_name(label: int) -> str:
    """0 -> ``"IsNext"``, 1 -> ``"NotNext"`` (Hugging Face's convention)."""
    if isinstance(label, bool) or not isinstance(label, int) or label not in LABEL_NAMES:   # a list: no hashing
        raise ValueError(f"label must be {IS_NEXT} (IsNext) or {NOT_NEXT} (NotNext), got {label!r}")
    return LABEL_NAMES[label]


def tally(labels) -> dict:
    """``{"IsNext": count, "NotNext": count}``."""
    counts = {"IsNext": 0, "NotNext": 0}
    for label in labels:
        counts[label_name(label)] += 1
    return counts


def draw_pair(tokens: list[str], segments: list[int], label: int, counts: dict | None = None,
              title: str = "") -> Figure:
    """Left: the tokens in boxes coloured by segment (0 blue, 1 orange), the segment id
    under each; the label in the title. Right: the tally's shares of IsNext / NotNext.

    ``fig.axes[0].texts``: per token, the token box then its segment id;
    ``fig.axes[1].patches``: the two bars (shares), in the order IsNext, NotNext.
    """
    n = len(tokens)
    if n == 0 or len(segments) != n:
        raise ValueError(f"tokens and segments must have the same length > 0, got {n} and {len(segments)}")
    label_name(label)                                # checks the label
    layout = token_layout([max(len(t), 2) for t in tokens])
    rows = layout[-1][0] + 1
    fig = Figure(figsize=(12.5, 1.7 + 0.9 * rows))
    ax, ax_bar = fig.subplots(1, 2, gridspec_kw={"width_ratios": [4.2, 1]})
    for (r, c), tok, seg in zip(layout, tokens, segments):
        y = -r * 1.0
        special = tok in ("[CLS]", "[SEP]")
        ax.text(c, y, tok, ha="center", va="center", fontsize=9,
                fontweight="bold" if special else "normal",
                bbox=dict(boxstyle="round,pad=0.3", facecolor=SEGMENT_COLOURS[seg],
                          edgecolor="#333333" if special else "#777777"))
        ax.text(c, y - 0.38, str(seg), ha="center", va="center", fontsize=7, color="#555555")
    ax.set_xlim(0, ROW_WIDTH)
    ax.set_ylim(-rows + 0.4, 0.6)
    ax.axis("off")
    ax.legend(handles=[Patch(facecolor=SEGMENT_COLOURS[0], label=_("segment 0: [CLS] A [SEP]")),
                       Patch(facecolor=SEGMENT_COLOURS[1], label=_("segment 1: B [SEP]"))],
              loc="upper center", bbox_to_anchor=(0.5, -0.02), ncol=2, fontsize=8, frameon=False)
    verdict = (_("IsNext (label 0): B is the sentence that follows A") if label == IS_NEXT else
               _("NotNext (label 1): B is a random sentence from another paragraph"))
    ax.set_title(f"{title}\n{verdict}" if title else verdict, fontsize=10, loc="left",
                 color="#1f6f2f" if label == IS_NEXT else "#a03000")

    counts = counts if counts is not None else tally([label])
    total = counts["IsNext"] + counts["NotNext"]
    shares = [counts[k] / total if total else 0.0 for k in ("IsNext", "NotNext")]
    draw_tally(ax_bar, ["IsNext (0)", "NotNext (1)"], shares, [counts["IsNext"], counts["NotNext"]],
               [0.5, 0.5], ["#74c476", "#fd8d3c"], _("share of pairs drawn"),
               (_("tally over {n} pairs\n(dashed: 50 %)") if total != 1 else
                _("tally over {n} pair\n(dashed: 50 %)")).format(n=total))
    fig.tight_layout()
    return fig


class PairSampler(RepeatedDraws):
    """Draw buttons, a seed and ``max_len`` -> the pair ``[CLS] A [SEP] B [SEP]`` coloured by
    segment with its label, and a running tally of the labels.

    ``state`` keys: ``seed``, ``max_len``, ``num_draws`` (the pair shown is draw
    ``num_draws - 1``), ``sentence_a``, ``sentence_b``, ``label`` (0 IsNext, 1 NotNext),
    ``label_name``, ``paragraph`` (index of A's paragraph), ``tokens``, ``segments``,
    ``lengths_before``, ``lengths_after`` (``(len A, len B)`` in tokens), ``labels`` (every
    label of this seed so far), ``tally`` (``{"IsNext": n, "NotNext": m}``), ``message``.
    """

    def __init__(self, tokenizer: WordPieceTokenizer | None = None, paragraphs=None,
                 seed: int = 0, max_len: int = 32):
        check_int("seed", seed, low=0, high=99)     # the sliders' ranges
        check_int("max_len", max_len, low=8, high=48)
        self.tokenizer = tokenizer if tokenizer is not None else get_tokenizer(0)
        self.paragraphs = paragraphs if paragraphs is not None else generate_corpus(0).train
        style = {"description_width": "70px"}
        self.seed = W.IntSlider(value=seed, min=0, max=99, description=_("seed"), style=style)
        self.max_len = W.IntSlider(value=max_len, min=8, max=48, description="max_len", style=style)
        self.draw_one = W.Button(description=_("draw"), tooltip=_("draw the next pair"))
        self.draw_many = W.Button(description=_("draw × 100"), tooltip=_("draw 100 more pairs (the tally grows)"))
        self.info = W.HTML()
        self._labels: list[int] = []
        self._seed_counted = None
        self._pair = None
        self.draw_one.on_click(lambda _: self.draw_more(1))
        self.draw_many.on_click(lambda _: self.draw_more(100))
        super().__init__([self.seed, self.max_len, self.draw_one, self.draw_many])
        self.widget = W.VBox([W.HBox([self.draw_one, self.draw_many]),
                              W.HBox([self.seed, self.max_len]), self.info, self.output])

    def link(self, change) -> None:
        if change["owner"] is self.seed:
            self._draws = 1                  # a new series of draws

    def compute(self) -> dict:
        seed, max_len = int(self.seed.value), int(self.max_len.value)
        if seed != self._seed_counted:
            self._seed_counted, self._labels, self._pair = seed, [], None
        if len(self._labels) > self._draws:   # after restart(): count again from the first draw
            self._labels, self._pair = [], None
        for d in range(len(self._labels), self._draws):
            self._pair = sample_pair(self.paragraphs, seed, d)
            self._labels.append(self._pair[2])
        if self._pair is None:
            self._pair = sample_pair(self.paragraphs, seed, self._draws - 1)
        a, b, label, j = self._pair
        tokens, segments, before, after = pair_tokens(a, b, self.tokenizer, max_len)
        counts = tally(self._labels)
        cut = "" if before == after else _(" Truncated to max_len={max_len}: A {a0} -> {a1}, B {b0} -> {b1} "
                                           "tokens.").format(max_len=max_len, a0=before[0], a1=after[0],
                                                             b0=before[1], b1=after[1])
        message = _("draw {draw} of seed {seed}: {name} (label {label}). Tally: {is_next} IsNext, {not_next} "
                    "NotNext ({share:.1f}% IsNext).{cut}").format(
            draw=self._draws - 1, seed=seed, name=label_name(label), label=label, is_next=counts["IsNext"],
            not_next=counts["NotNext"], share=100 * counts["IsNext"] / len(self._labels), cut=cut)
        return {"seed": seed, "max_len": max_len, "num_draws": self._draws, "sentence_a": a,
                "sentence_b": b, "label": label, "label_name": label_name(label), "paragraph": j,
                "tokens": tokens, "segments": segments, "lengths_before": before,
                "lengths_after": after, "labels": list(self._labels), "tally": counts,
                "message": message}

    def draw(self, state: dict) -> Figure:
        return draw_pair(state["tokens"], state["segments"], state["label"], state["tally"],
                         title=_("seed {seed}, draw {draw}, max_len {max_len}").format(
                             seed=state["seed"], draw=state["num_draws"] - 1, max_len=state["max_len"]))

    def update(self) -> None:
        super().update()
        s = self.state
        self.info.value = (f"<b>A:</b> {html.escape(s['sentence_a'])}<br>"
                           f"<b>B:</b> {html.escape(s['sentence_b'])}<br><b>{html.escape(s['message'])}</b>")
