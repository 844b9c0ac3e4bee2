"""Chapter 13 widget: what one training step holds in memory.

Choose the batch (sentences and their length in word pieces), switch activation checkpointing
and the frozen word-embedding table on or off, and see the four parts of a float32 training
step of chapter 9's classifier: the weights, their gradients, AdamW's two moments and the
activations kept for the backward pass, against Binder's 1 GB.

The activations are not guessed: :func:`bertcourse.memory.activation_formula` measures four
small batches once and gives the exact bytes for any batch (tests compare it with direct
measurements). Its ``per_pair`` term, the attention weights, grows with the square of the
length; checkpointing keeps only each block's input, so that term goes.

Pure function (tested directly): :func:`step_memory`. Draw function: :func:`draw_step_memory`.
Widget: :class:`MemoryBudget`.
"""
from __future__ import annotations

import ipywidgets as W
import torch
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from .._checks import check_bool, check_int, check_keys
from ..finetune import BERTClassifier, classification_step
from ..i18n import gettext as _, gettext_noop as N_
from ..memory import activation_bytes, activation_formula
from . import FigureWidget

__all__ = ["MB", "BINDER_MB", "BATCH_SIZES", "SEQ_LENS", "step_memory", "draw_step_memory", "MemoryBudget"]

MB = 2 ** 20
BINDER_MB = 1024            # what Binder guarantees a notebook: its kernel, libraries and data included
BATCH_SIZES = (1, 2, 4, 8, 16, 32, 64)
SEQ_LENS = (16, 32, 64, 128, 256, 512)          # 512: BERT's and MiniLM's longest input
PARTS = ("weights", "gradients", "moments", "activations")
# the parts' names in the figure, translated where drawn
LABELS = {"weights": N_("weights"), "gradients": N_("gradients"), "moments": N_("AdamW's moments"),
          "activations": N_("activations")}
COLOURS = {"weights": "#9d9d9d", "gradients": "#4c78a8", "moments": "#f58518", "activations": "#54a24b"}


def _full_batch(batch_size: int, seq_len: int) -> dict:
    """A batch of ``classification_step``'s form with no padding: only its shape matters here."""
    return {"tokens": torch.ones(batch_size, seq_len, dtype=torch.long),
            "mask": torch.ones(batch_size, seq_len, dtype=torch.bool),
            "labels": torch.zeros(batch_size, dtype=torch.long)}


def step_memory(model: BERTClassifier, formulas: dict, batch_size: int, seq_len: int, checkpointing: bool,
                train_word_embeddings: bool) -> dict:
    """MB held by one float32 training step of ``model`` with AdamW: ``weights`` (every
    parameter), ``gradients`` and ``moments`` (two per trained parameter; the word-embedding
    table is not trained unless ``train_word_embeddings``), ``activations`` (by
    ``formulas[checkpointing]``, two results of :func:`~bertcourse.memory.activation_formula`),
    their ``total``, and ``attention_share``: the part of the activations that is the
    attention weights (the ``per_pair`` term)."""
    if not isinstance(model, BERTClassifier):
        raise TypeError(f"model must be a BERTClassifier, got {type(model).__name__}")
    check_bool("checkpointing", checkpointing)
    check_bool("train_word_embeddings", train_word_embeddings)
    if not isinstance(formulas, dict) or set(formulas) != {False, True}:
        raise TypeError("formulas must be a dict {False: formula, True: formula with checkpointing} of "
                        f"activation_formula results, got {formulas!r}")
    formula = formulas[checkpointing]
    check_keys("formulas[checkpointing]", formula, ("per_pair",), "activation_formula")
    kept = activation_bytes(formula, batch_size, seq_len)
    n_params = sum(p.numel() for p in model.parameters())
    trained = n_params - (0 if train_word_embeddings else model.encoder.token_embedding.weight.numel())
    state = {"batch_size": batch_size, "seq_len": seq_len, "checkpointing": checkpointing,
             "train_word_embeddings": train_word_embeddings, "parameters": n_params, "trained": trained,
             "weights": n_params * 4 / MB, "gradients": trained * 4 / MB, "moments": 2 * trained * 4 / MB,
             "activations": kept / MB,
             "attention_share": batch_size * formula["per_pair"] * seq_len ** 2 / kept}
    state["total"] = sum(state[part] for part in PARTS)
    return state


def draw_step_memory(state: dict) -> Figure:
    """One horizontal bar: the four parts of :func:`step_memory` side by side, and a dashed
    line at Binder's 1 GB. ``fig.axes[0].patches``: the four parts, in :data:`PARTS` order."""
    check_keys("state", state, (*PARTS, "total", "batch_size", "seq_len"), "step_memory")
    fig = Figure(figsize=(11, 2.6))
    ax = fig.subplots()
    right = max(state["total"], BINDER_MB) * 1.08
    x = 0.0
    for part in PARTS:
        width = state[part]
        ax.add_patch(Rectangle((x, 0), width, 1, facecolor=COLOURS[part], edgecolor="white"))
        if width > 0.07 * right:         # a label only where it fits
            ax.text(x + width / 2, 0.5, f"{_(LABELS[part])}\n{width:,.0f} MB", ha="center", va="center", fontsize=9,
                    color="white")
        x += width
    ax.axvline(BINDER_MB, color="#c0392b", linestyle="--", lw=1.2)
    ax.text(BINDER_MB - 0.01 * right, 1.08, _("Binder: 1 GB for the whole kernel"), color="#c0392b", fontsize=8,
            ha="right", va="bottom")
    ax.set_xlim(0, right)
    ax.set_ylim(-0.1, 1.35)
    ax.set_yticks([])
    ax.set_xlabel("MB")
    ax.set_title(_("a batch of {b} x {s} word pieces: {total:,.0f} MB in one training step (float32)").format(
        b=state["batch_size"], s=state["seq_len"], total=state["total"]), fontsize=10, loc="left")
    fig.tight_layout()
    return fig


class MemoryBudget(FigureWidget):
    """Batch size, sentence length, checkpointing and a frozen word-embedding table -> the
    memory of one training step of ``model`` (a :class:`~bertcourse.finetune.BERTClassifier`).

    Measures :func:`~bertcourse.memory.activation_formula` once with checkpointing and once
    without (eight forward passes of small batches; the model is left as it was).
    ``state``: :func:`step_memory`'s dict plus ``message`` (the line above the figure);
    ``formulas``: the two formulas, keyed by ``checkpointing``.
    """

    def __init__(self, model: BERTClassifier, batch_size: int = 16, seq_len: int = 64, checkpointing: bool = False,
                 train_word_embeddings: bool = True):
        if not isinstance(model, BERTClassifier):
            raise TypeError(f"model must be a BERTClassifier, got {type(model).__name__}")
        for name, value, choices in (("batch_size", batch_size, BATCH_SIZES), ("seq_len", seq_len, SEQ_LENS)):
            check_int(name, value)
            if value not in choices:
                raise ValueError(f"{name} must be one of {', '.join(map(str, choices))} (the slider's choices), "
                                 f"got {value}")
        check_bool("checkpointing", checkpointing)
        check_bool("train_word_embeddings", train_word_embeddings)
        self.model = model
        was = model.encoder.checkpointing
        try:
            self.formulas = {}
            for on in (False, True):
                model.encoder.checkpointing = on
                self.formulas[on] = activation_formula(model, classification_step, _full_batch)
        finally:
            model.encoder.checkpointing = was
        style, wide = {"description_width": "170px"}, W.Layout(width="480px")
        self.batch_size = W.SelectionSlider(options=list(BATCH_SIZES), value=batch_size, layout=wide,
                                            description=_("sentences per batch"), style=style)
        self.seq_len = W.SelectionSlider(options=list(SEQ_LENS), value=seq_len, layout=wide,
                                         description=_("word pieces per sentence"), style=style)
        full = {"description_width": "initial"}       # the whole label, not cut to the default width
        self.checkpointing = W.Checkbox(value=checkpointing, description=_("activation checkpointing"), style=full)
        self.train_word_embeddings = W.Checkbox(value=train_word_embeddings, style=full,
                                                description=_("train the word-embedding table"))
        self.info = W.HTML()
        controls = [self.batch_size, self.seq_len, self.checkpointing, self.train_word_embeddings]
        super().__init__(controls)
        self.widget = W.VBox([*controls, self.info, self.output])

    def compute(self) -> dict:
        state = step_memory(self.model, self.formulas, self.batch_size.value, self.seq_len.value,
                            self.checkpointing.value, self.train_word_embeddings.value)
        state["message"] = _("activations {act:,.0f} MB, of which the attention weights {share:.0%} (they grow with "
                             "the square of the length); weights, gradients and moments {rest:,.0f} MB").format(
            act=state["activations"], share=state["attention_share"],
            rest=state["weights"] + state["gradients"] + state["moments"])
        return state

    def draw(self, state: dict) -> Figure:
        self.info.value = f"<b>{state['message']}</b>"
        return draw_step_memory(state)
