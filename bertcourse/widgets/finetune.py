"""Chapter 9 widget: "why did it say that?"

Type a sentence (or pick one of the test sentences the classifier gets wrong) and see the
fine-tuned classifier's P(positive) and how much each word piece contributed to it, by
**occlusion**: the sentence is run again without that piece, and the contribution is the
drop in P(positive). Green bars pushed towards *positive*, red bars towards *negative*.

Occlusion is a simple, honest measurement (no gradients, nothing learned), but it answers a
narrow question: "what if this one piece were missing?". Two pieces that each suffice (*great*
and *excellent* in one sentence) can both look unimportant.

Pure function (tested directly): :func:`contribution_data` (on top of
:func:`bertcourse.finetune.token_contributions`). Draw function: :func:`draw_contributions`.
Widget: :class:`WhyDidItSayThat`. The chapter's two other figures: :func:`draw_comparison`
(the four methods) and :func:`draw_learning_curves` (accuracy against training-set size).
"""
from __future__ import annotations

import ipywidgets as W
import numpy as np
from matplotlib.figure import Figure

from .._checks import check_int
from ..finetune import BERTClassifier, misclassified, token_contributions
from ..reviews import LABELS, Review
from ..i18n import gettext as _
from . import FigureWidget
from .drawing import draw_message

__all__ = ["TYPE_YOUR_OWN", "contribution_data", "draw_contributions", "WhyDidItSayThat", "draw_comparison",
           "draw_learning_curves"]

TYPE_YOUR_OWN = -1          # the example control's value for "the text box holds my own sentence"


def contribution_data(model: BERTClassifier, tokenizer, text: str, true_label: int | None = None) -> dict:
    """What the widget shows for ``text``: :func:`~bertcourse.finetune.token_contributions`
    (``pieces``, ``p`` = P(positive), ``p_without``, ``contributions``) plus ``prediction``
    (0/1), ``true_label`` (or ``None``), ``correct`` (or ``None``), ``top_positive`` /
    ``top_negative`` (``(piece, contribution)`` of the piece that pushed most towards each
    side, or ``None``) and a one-line ``message``."""
    if true_label is not None:
        check_int("true_label", true_label, low=0, high=len(LABELS) - 1)
    data = token_contributions(model, tokenizer, text, target=1)
    p, contrib, pieces = data["p"], data["contributions"], data["pieces"]
    prediction = int(p > 0.5)
    data.update(prediction=prediction, true_label=true_label,
                correct=None if true_label is None else prediction == true_label,
                top_positive=None, top_negative=None)
    if not pieces:
        data["message"] = _("type a sentence")
        return data
    i, j = int(contrib.argmax()), int(contrib.argmin())
    if contrib[i] > 0:
        data["top_positive"] = (pieces[i], float(contrib[i]))
    if contrib[j] < 0:
        data["top_negative"] = (pieces[j], float(contrib[j]))
    msg = _("P(positive) = {p:.2f} → {label}").format(p=p, label=LABELS[prediction])
    if true_label is not None:
        msg += (_(" (correct)") if data["correct"] else
                _(" — WRONG: the data set says {label}").format(label=LABELS[true_label]))
    parts = []
    if data["top_positive"]:
        parts.append(_("most positive piece '{piece}' ({value:+.2f})").format(
            piece=data["top_positive"][0], value=data["top_positive"][1]))
    if data["top_negative"]:
        parts.append(_("most negative piece '{piece}' ({value:+.2f})").format(
            piece=data["top_negative"][0], value=data["top_negative"][1]))
    data["message"] = msg + (_(". ") + _("; ").join(parts) if parts else "") + _(".")
    return data


def draw_contributions(data: dict, title: str = "") -> Figure:
    """Horizontal bars, one per word piece in sentence order (top to bottom): its
    contribution to P(positive) (``fig.axes[0].patches[k]`` is piece ``k``; width =
    contribution). Green: towards positive; red: towards negative."""
    pieces, contrib = data["pieces"], data["contributions"]
    if not pieces:
        return draw_message(_("type a sentence to see each token's contribution"))
    values = np.asarray(contrib, dtype=float)
    n = len(pieces)
    fig = Figure(figsize=(8, max(2.2, 0.28 * n + 1.3)))
    ax = fig.add_subplot()
    colors = ["#2e7d32" if v >= 0 else "#c62828" for v in values]
    y = np.arange(n)
    ax.barh(y, values, color=colors, height=0.7)
    ax.set_yticks(y, pieces, fontsize=9)
    ax.invert_yaxis()                               # first piece at the top
    ax.axvline(0.0, color="0.3", lw=0.8)
    limit = max(0.05, float(np.abs(values).max()) * 1.15)
    ax.set_xlim(-limit, limit)
    ax.set_xlabel(_("contribution to P(positive) = P(sentence) − P(sentence without the piece)"))
    ax.grid(axis="x", alpha=0.3)
    head = _("P(positive) = {p:.2f} → {label}").format(p=data["p"], label=LABELS[int(data["p"] > 0.5)])
    if data.get("true_label") is not None:
        head += _("   (data set: {label})").format(label=LABELS[data["true_label"]])
    ax.set_title(title + ("\n" if title else "") + head, fontsize=10)
    fig.tight_layout()
    return fig


class WhyDidItSayThat(FigureWidget):
    """Sentence box and a browser of misclassified test sentences -> P(positive) and each
    piece's contribution.

    ``reviews`` (e.g. the test split) are searched for the classifier's mistakes once, at
    start; choosing one in the ``example`` dropdown copies its text into the box. ``state``
    holds :func:`contribution_data`'s keys plus ``text`` and ``example`` (the index into
    ``mistakes``, or :data:`TYPE_YOUR_OWN`). ``mistakes`` is a list of ``(review, p_positive)``.
    """

    def __init__(self, model: BERTClassifier, tokenizer, reviews: list[Review] | None = None,
                 text: str = "The battery died after two days, but the screen is gorgeous."):
        if not isinstance(model, BERTClassifier):
            raise TypeError(f"model must be a BERTClassifier (fine-tuned), got {type(model).__name__}")
        self.model, self.tokenizer = model, tokenizer
        self.mistakes = misclassified(model, tokenizer, reviews) if reviews else []
        style = {"description_width": "80px"}
        self.text = W.Text(value=text, description=_("sentence"), continuous_update=False, style=style,
                           layout=W.Layout(width="640px"))
        options = [(_("(type your own sentence below)"), TYPE_YOUR_OWN)]
        for i, (r, p) in enumerate(self.mistakes):
            short = r.text if len(r.text) <= 70 else r.text[:67] + "..."
            options.append((_("{i}. {site}, labelled {label}, P(pos)={p:.2f}: {text}").format(
                i=i + 1, site=r.site, label=LABELS[r.label], p=p, text=short), i))
        self.example = W.Dropdown(options=options, value=TYPE_YOUR_OWN, style=style,
                                  description=_("mistakes ({n})").format(n=len(self.mistakes)),
                                  layout=W.Layout(width="640px"))
        self.info = W.HTML()
        super().__init__([self.example, self.text])
        self.widget = W.VBox([self.example, self.text, self.info, self.output])

    def link(self, change) -> None:
        if change["owner"] is self.example and self.example.value != TYPE_YOUR_OWN:
            self.text.value = self.mistakes[self.example.value][0].text
        elif change["owner"] is self.text and self.example.value != TYPE_YOUR_OWN \
                and self.text.value != self.mistakes[self.example.value][0].text:
            self.example.value = TYPE_YOUR_OWN      # the box no longer holds the chosen example

    def compute(self) -> dict:
        i = self.example.value
        true_label = self.mistakes[i][0].label if i != TYPE_YOUR_OWN else None
        data = contribution_data(self.model, self.tokenizer, self.text.value, true_label)
        data.update(text=self.text.value, example=i)
        return data

    def draw(self, state: dict) -> Figure:
        return draw_contributions(state)

    def update(self) -> None:
        super().update()
        self.info.value = f"<b>{self.state['message']}</b>"


def draw_comparison(results: dict) -> Figure:
    """Two bar charts of ``results`` ``{method: {"test accuracy": a, "training time (s)": t}}``
    in the given order: test accuracy (``fig.axes[0].patches[k]``, height = accuracy; the
    dashed line is chance, 0.5) and training time (``fig.axes[1]``, seconds)."""
    names = list(results)
    if not names:
        raise ValueError("results must hold at least one method")
    acc = [float(results[n]["test accuracy"]) for n in names]
    secs = [float(results[n]["training time (s)"]) for n in names]
    fig = Figure(figsize=(11, 3.4))
    ax1, ax2 = fig.subplots(1, 2)
    y = np.arange(len(names))
    colors = ["#8d8d8d", "#c98b2b", "#5b8fd1", "#2e7d32"][:len(names)] + ["#555555"] * max(0, len(names) - 4)
    ax1.barh(y, acc, color=colors)
    ax1.axvline(0.5, color="0.3", ls="--", lw=1)
    for k, a in enumerate(acc):
        ax1.text(a + 0.005, k, f"{a:.3f}", va="center", fontsize=9)
    ax1.set_yticks(y, names, fontsize=9)
    ax1.invert_yaxis()
    ax1.set_xlim(0.45, 1.0)
    ax1.set_xlabel(_("test accuracy (300 sentences); dashed: chance"))
    ax2.barh(y, secs, color=colors)
    for k, t in enumerate(secs):
        ax2.text(t, k, f" {t:.0f} s", va="center", fontsize=9)
    ax2.set_yticks(y, [""] * len(names))
    ax2.invert_yaxis()
    ax2.set_xlim(0, max(secs) * 1.25 if max(secs) > 0 else 1)
    ax2.set_xlabel(_("training time on this machine (s)"))
    fig.tight_layout()
    return fig


def draw_learning_curves(curves: dict) -> Figure:
    """Test accuracy against the number of training sentences: ``curves`` is ``{n: {method:
    accuracy}}``; one line per method (``fig.axes[0].lines[k]``), x on a log scale."""
    if not curves:
        raise ValueError("curves must hold at least one training-set size")
    sizes = sorted(curves)
    methods = list(curves[sizes[0]])
    fig = Figure(figsize=(6.5, 3.6))
    ax = fig.add_subplot()
    for m in methods:
        ax.plot(sizes, [curves[n][m] for n in sizes], "o-", label=m)
    ax.axhline(0.5, color="0.3", ls="--", lw=1, label=_("chance"))
    ax.set_xscale("log")
    ax.set_xticks(sizes, [f"{n:,}" for n in sizes])
    ax.minorticks_off()
    ax.set(xlabel=_("training sentences"), ylabel=_("test accuracy"), ylim=(0.45, 1.0),
           title=_("What pretraining buys when labels are few"))
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right")
    fig.tight_layout()
    return fig
