"""Chapter 10 widget: the inference explorer.

Type a premise and a hypothesis (or pick an SNLI pair) and see the fine-tuned classifier's
three probabilities, *entailment*, *neutral* and *contradiction*, for the pair as typed and
for the **swapped** pair (the hypothesis read as the premise). Above the bars: the model's
input, ``[CLS] premise [SEP] hypothesis [SEP]``, coloured by segment (0: blue, 1: orange),
so the learner sees which text the model reads as which. The *Swap* button exchanges the
two boxes.

Entailment is not symmetric: *a dog runs* entails *an animal moves*, not the reverse; a
model that gives a pair and its swap the same label either learnt that contradiction is
symmetric or ignores the order. Three probabilities are not an explanation, though: they
do not say which words the model read (a hypothesis with *not* in it is often called a
contradiction whatever the premise), and a confident probability can be wrong.

Pure function (tested directly): :func:`inference_data` (on top of
:func:`bertcourse.finetune.predict_proba`). Draw function: :func:`draw_inference`.
Widget: :class:`InferenceExplorer`.
"""
from __future__ import annotations

import html

import ipywidgets as W
import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from .._checks import check_instance, check_keys, check_list_of, check_tokenizer_fits
from ..finetune import BERTClassifier, predict_proba
from ..i18n import gettext as _
from ..sentence_pairs import LABELS, Pair, encode_pairs
from . import FigureWidget
from .drawing import ROW_WIDTH, SEGMENT_COLOURS, draw_message, token_layout

__all__ = ["TYPE_YOUR_OWN", "SEGMENT_COLOURS", "inference_data", "draw_inference", "InferenceExplorer"]

TYPE_YOUR_OWN = -1          # the example control's value for "the boxes hold my own pair"
LABEL_COLOURS = ("#2e7d32", "#8d8d8d", "#c62828")  # entailment, neutral, contradiction
KEYS = ("labels", "pieces", "segments", "p", "p_swapped", "prediction", "prediction_swapped", "changed",
        "message")


def inference_data(model: BERTClassifier, tokenizer, premise: str, hypothesis: str) -> dict:
    """What the widget shows for the pair: ``labels`` (:data:`~bertcourse.sentence_pairs.LABELS`),
    ``pieces`` and ``segments`` (``[CLS] premise [SEP] hypothesis [SEP]`` as the model reads it),
    ``p`` (the three probabilities, a float array ``(3,)``, in the order of ``labels``) and
    ``p_swapped`` (for the hypothesis as premise and the premise as hypothesis), ``prediction``
    and ``prediction_swapped`` (label names), ``changed`` (whether they differ) and a one-line
    ``message``. With a blank premise or hypothesis (the learner is typing) the probabilities
    and predictions are ``None`` and the message asks for both."""
    check_instance("model", model, BERTClassifier, "fine-tune one with num_classes=3")
    check_instance("premise", premise, str)
    check_instance("hypothesis", hypothesis, str)
    check_tokenizer_fits(tokenizer, model)
    if model.config.num_classes != len(LABELS):
        raise ValueError(f"model must classify into the {len(LABELS)} labels {list(LABELS)} (num_classes=3), "
                         f"got a classifier with num_classes={model.config.num_classes}")
    enc = encode_pairs(tokenizer, [Pair(premise, hypothesis, 0)])
    data = {"labels": LABELS, "pieces": enc.pieces[0], "segments": enc.segments[0], "p": None,
            "p_swapped": None, "prediction": None, "prediction_swapped": None, "changed": False}
    if not premise.strip() or not hypothesis.strip():
        data["message"] = _("type a premise and a hypothesis")
        return data
    probs = predict_proba(model, tokenizer, [Pair(premise, hypothesis, 0), Pair(hypothesis, premise, 0)])
    p, q = probs.double().numpy()
    a, b = LABELS[int(p.argmax())], LABELS[int(q.argmax())]
    data.update(p=p, p_swapped=q, prediction=a, prediction_swapped=b, changed=a != b)
    msg = _("{label} ({p:.2f}) → swapped: {label_swapped} ({p_swapped:.2f})").format(
        label=a, p=p.max(), label_swapped=b, p_swapped=q.max())
    if a != b:
        msg += _(". The order matters: entailment is not symmetric (a dog runs ⊨ an animal moves, not the "
                 "reverse)")
    data["message"] = msg + _(".")
    return data


def draw_inference(data: dict) -> Figure:
    """Top (``fig.axes[0]``): the pieces in boxes coloured by segment. Bottom (``fig.axes[1]``):
    six horizontal bars, ``patches[0:3]`` the probabilities as typed and ``patches[3:6]`` swapped,
    each group in the order of ``labels`` (width = probability, written on the bar); the
    predicted bar of each group is opaque with a black edge, the others pale."""
    check_keys("data", data, KEYS, "inference_data()")
    if data["p"] is None:
        return draw_message(_("type a premise and a hypothesis to see the three probabilities"))
    pieces, segments = data["pieces"], data["segments"]
    layout = token_layout([max(len(t), 2) for t in pieces])
    rows = layout[-1][0] + 1
    fig = Figure(figsize=(10, 3.6 + 0.45 * rows))
    ax_tok, ax = fig.subplots(2, 1, gridspec_kw={"height_ratios": [0.45 * rows + 0.5, 3.1]})
    for (r, c), tok, seg in zip(layout, pieces, segments):
        ax_tok.text(c, -r, tok, ha="center", va="center", fontsize=9,
                    fontweight="bold" if tok in ("[CLS]", "[SEP]") else "normal",
                    bbox=dict(boxstyle="round,pad=0.3", facecolor=SEGMENT_COLOURS[seg], edgecolor="#777777"))
    ax_tok.set_xlim(0, ROW_WIDTH)
    ax_tok.set_ylim(-rows + 0.5, 0.5)
    ax_tok.axis("off")
    ax_tok.legend(handles=[Patch(facecolor=SEGMENT_COLOURS[0], label=_("segment 0: [CLS] premise [SEP]")),
                           Patch(facecolor=SEGMENT_COLOURS[1], label=_("segment 1: hypothesis [SEP]"))],
                  loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=2, fontsize=8, frameon=False)
    k = len(data["labels"])
    for g, (p, name) in enumerate(((data["p"], _("as typed: premise ⇒ hypothesis")),
                                   (data["p_swapped"], _("swapped: hypothesis ⇒ premise")))):
        y = np.arange(k) + g * (k + 1)
        best = int(np.argmax(p))
        for j in range(k):
            ax.barh(y[j], p[j], color=LABEL_COLOURS[j % 3], alpha=1.0 if j == best else 0.35, height=0.75,
                    edgecolor="black" if j == best else "none", linewidth=1.5 if j == best else 0)
            ax.text(p[j] + 0.01, y[j], f"{p[j]:.2f}", va="center", fontsize=9,
                    fontweight="bold" if j == best else "normal")
        ax.text(0.0, y[0] - 0.7, name, fontsize=9, style="italic", va="center")
    ax.set_yticks([j + g * (k + 1) for g in range(2) for j in range(k)], list(data["labels"]) * 2, fontsize=9)
    ax.set_ylim(2 * k + 0.6, -1.2)                  # first group on top
    ax.set_xlim(0, 1.1)
    ax.set_xlabel(_("probability"))
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    return fig


class InferenceExplorer(FigureWidget):
    """A premise box, a hypothesis box, a *Swap* button and a menu of ``examples`` -> the three
    probabilities of the pair as typed and swapped, and the pieces coloured by segment.

    Choosing an example copies its premise and hypothesis into the boxes; editing a box, or
    swapping, leaves the example (its gold label is the pair's, not the swap's). ``state`` holds
    :func:`inference_data`'s keys plus ``premise``, ``hypothesis``, ``example`` (the index into
    ``examples``, or :data:`TYPE_YOUR_OWN`) and ``gold_label`` (the example's label name, or ``None``).
    """

    def __init__(self, model: BERTClassifier, tokenizer, examples: list[Pair],
                 premise: str = "A dog runs through the grass .", hypothesis: str = "An animal is moving ."):
        check_instance("model", model, BERTClassifier, "fine-tune one with num_classes=3")
        check_list_of("examples", examples, Pair, "Pair (see load_snli())", allow_empty=True)
        check_instance("premise", premise, str)
        check_instance("hypothesis", hypothesis, str)
        self.model, self.tokenizer, self.examples = model, tokenizer, list(examples)
        style, wide = {"description_width": "90px"}, W.Layout(width="680px")
        options = [(_("(type your own pair below)"), TYPE_YOUR_OWN)]
        for i, ex in enumerate(self.examples):
            short = ex.premise if len(ex.premise) <= 60 else ex.premise[:57] + "..."
            options.append((f"{i + 1}. {LABELS[ex.label]}: {short}", i))
        self.example = W.Dropdown(options=options, value=TYPE_YOUR_OWN, description=_("SNLI pairs"),
                                  style=style, layout=wide)
        self.premise = W.Text(value=premise, description=_("premise"), continuous_update=False, style=style,
                              layout=wide)
        self.hypothesis = W.Text(value=hypothesis, description=_("hypothesis"), continuous_update=False,
                                 style=style, layout=wide)
        self.swap_button = W.Button(description=_("Swap"), tooltip=_("exchange the premise and the hypothesis"))
        self.swap_button.on_click(lambda _button: self.swap())
        self.info = W.HTML()
        super().__init__([self.example, self.premise, self.hypothesis, self.swap_button])
        self.widget = W.VBox([self.example, self.premise, self.hypothesis, self.swap_button, self.info,
                              self.output])

    def _shows_example(self) -> bool:
        i = self.example.value
        return i != TYPE_YOUR_OWN and (self.premise.value, self.hypothesis.value) == \
            (self.examples[i].premise, self.examples[i].hypothesis)

    def link(self, change) -> None:
        if change["owner"] is self.example and self.example.value != TYPE_YOUR_OWN:
            ex = self.examples[self.example.value]
            self.premise.value, self.hypothesis.value = ex.premise, ex.hypothesis
        elif change["owner"] is not self.example and not self._shows_example():
            self.example.value = TYPE_YOUR_OWN      # the boxes no longer hold the chosen example

    def swap(self) -> None:
        """Exchange the two boxes (what the *Swap* button does), then redraw once."""
        self._linking = True                        # the three changes below redraw once, at the end
        try:
            self.premise.value, self.hypothesis.value = self.hypothesis.value, self.premise.value
            if not self._shows_example():
                self.example.value = TYPE_YOUR_OWN
        finally:
            self._linking = False
        self.update()

    def compute(self) -> dict:
        i = self.example.value
        data = inference_data(self.model, self.tokenizer, self.premise.value, self.hypothesis.value)
        data.update(premise=self.premise.value, hypothesis=self.hypothesis.value, example=i,
                    gold_label=None if i == TYPE_YOUR_OWN else LABELS[self.examples[i].label])
        return data

    def draw(self, state: dict) -> Figure:
        return draw_inference(state)

    def update(self) -> None:
        super().update()
        gold = self.state["gold_label"]
        extra = "" if gold is None else html.escape(_(" Gold label: {label}.").format(label=gold))
        self.info.value = f"<b>{html.escape(self.state['message'])}</b>{extra}"
