"""Chapter 3 widget: the attention explorer for a trained encoder–decoder Transformer.

Choose an example, the kind of attention, a layer and a head:

* **encoder self**: source words attending to source words;
* **decoder self**: output steps attending to earlier output steps; everything above the
  diagonal is exactly 0, because step ``t`` may only look at steps ``0..t`` (causal mask);
* **cross**: output steps (queries) attending to source words (keys and values come from
  the encoder): where each output character "reads" its information.

The model first decodes the source greedily; then it runs once more on the source and
``<bos>`` + its own prediction, keeping every layer's weights (the same numbers the
step-by-step decoder computed, see the tests). Rows of the decoder maps are labelled
``input → predicted``.

Pure function (tested directly): :func:`example_attention`. Draw function:
:func:`draw_attention_map`. Widget: :class:`TransformerAttentionExplorer`.
"""
from __future__ import annotations

import ipywidgets as W
import torch
from matplotlib.figure import Figure

from .._checks import check_instance, check_str_list, check_tensor
from ..attention import inspect_attention
from ..seq2seq import BOS, EOS, DateVocab, translate
from ..transformer import EncoderDecoder
from ..i18n import gettext as _, gettext_noop as N_
from . import FigureWidget
from .drawing import draw_heatmap

__all__ = ["KINDS", "example_attention", "draw_attention_map", "TransformerAttentionExplorer"]

KINDS = ["encoder self", "decoder self", "cross"]
# how the buttons and the title name each kind (translated where shown; the values stay KINDS)
KIND_NAMES = {"encoder self": N_("encoder self"), "decoder self": N_("decoder self"), "cross": N_("cross")}


@torch.no_grad()
def example_attention(model: EncoderDecoder, source: list[str], src_vocab: DateVocab, tgt_vocab: DateVocab,
                      max_len: int = 16) -> dict:
    """Decode ``source`` and collect every attention map of the model on it.

    Returns a dict with ``source`` (words), ``prediction`` (output tokens, without
    ``<eos>``), ``dec_inputs`` (``<bos>`` + prediction), ``dec_outputs`` (prediction +
    ``<eos>``) and, for each kind in :data:`KINDS`, a tensor
    ``(layers, heads, queries, keys)``: ``encoder self`` ``(L, H, S, S)``,
    ``decoder self`` ``(L, H, T, T)``, ``cross`` ``(L, H, T, S)`` with ``S`` source words
    and ``T = len(prediction) + 1`` decoder steps.
    """
    check_instance("model", model, EncoderDecoder)
    check_str_list("source", source, what="source words", allow_empty=False)
    check_instance("src_vocab", src_vocab, DateVocab, "src_vocab_for_dates()")
    check_instance("tgt_vocab", tgt_vocab, DateVocab, "tgt_vocab_for_dates()")
    try:
        src_vocab.encode(source)
    except ValueError as e:         # the vocabulary's message says "tokens"; the argument is `source`
        raise ValueError(f"source holds words the model does not know: {e}") from None
    prediction = translate(model, [source], src_vocab, tgt_vocab, max_len)[0]
    src = torch.tensor([src_vocab.encode(source)])
    dec_in = torch.tensor([[tgt_vocab.bos_id] + tgt_vocab.encode(prediction)])
    with inspect_attention(model):             # the weights are needed, not the fast path
        model(src, dec_in, torch.tensor([len(source)]))
    stack = lambda ws: torch.stack([w[0] for w in ws])          # drop the batch axis
    return {"source": list(source), "prediction": prediction,
            "dec_inputs": [BOS] + prediction, "dec_outputs": prediction + [EOS],
            "encoder self": stack(model.encoder.attention_weights),
            "decoder self": stack(model.decoder.self_attention_weights),
            "cross": stack(model.decoder.cross_attention_weights)}


def draw_attention_map(weights: torch.Tensor, row_labels: list[str], col_labels: list[str],
                       title: str = "") -> Figure:
    """Heatmap of ``(queries, keys)`` weights with token labels (``fig.axes[0].images[0]``)."""
    check_tensor("weights", weights, ndim=2, expected="(queries, keys)", floating=True)
    q, k = weights.shape
    fig = Figure(figsize=(1.2 + 0.45 * max(k, 6), 1.2 + 0.36 * max(q, 6)))
    im = draw_heatmap(fig.add_subplot(), weights, row_labels, col_labels, fontsize=9, title=title,
                      title_size=10)
    # one flat colour per cell even where a long example draws the cells small (matplotlib
    # would otherwise smooth a map drawn at under 3 pixels per cell)
    im.set_interpolation("nearest")
    fig.tight_layout()
    return fig


class TransformerAttentionExplorer(FigureWidget):
    """Example, attention kind, layer and head -> labelled heatmap.

    ``state`` keys: ``example`` (index), ``kind``, ``layer``, ``head``, ``weights``
    (``(queries, keys)``), ``row_labels``, ``col_labels``, ``source``, ``prediction``.
    """

    def __init__(self, model: EncoderDecoder, sources: list[list[str]], src_vocab: DateVocab,
                 tgt_vocab: DateVocab, max_len: int = 16):
        if not sources:
            raise ValueError("sources must hold at least one example")
        self.model, self.sources = model, [list(s) for s in sources]
        self.src_vocab, self.tgt_vocab, self.max_len = src_vocab, tgt_vocab, max_len
        self._maps: dict[int, dict] = {}
        num_blks = len(model.encoder.blks)
        num_heads = model.encoder.blks[0].attention.num_heads
        style = {"description_width": "70px"}
        self.example = W.Dropdown(options=[(" ".join(s), i) for i, s in enumerate(self.sources)],
                                  value=0, description=_("example"), style=style,
                                  layout=W.Layout(width="520px"))
        self.kind = W.ToggleButtons(options=[(_(KIND_NAMES[k]), k) for k in KINDS], value="cross",
                                    description=_("attention"), style=style)
        self.layer = W.IntSlider(value=0, min=0, max=num_blks - 1, description=_("layer"), style=style)
        self.head = W.IntSlider(value=0, min=0, max=num_heads - 1, description=_("head"), style=style)
        self.info = W.HTML()
        super().__init__([self.example, self.kind, self.layer, self.head])
        self.widget = W.VBox([self.example, self.kind, W.HBox([self.layer, self.head]),
                              self.info, self.output])

    def maps(self, index: int) -> dict:
        """:func:`example_attention` for example ``index`` (computed once, then kept)."""
        if index not in self._maps:
            self._maps[index] = example_attention(self.model, self.sources[index], self.src_vocab,
                                                  self.tgt_vocab, self.max_len)
        return self._maps[index]

    def compute(self) -> dict:
        m = self.maps(self.example.value)
        kind, layer, head = self.kind.value, self.layer.value, self.head.value
        steps = [f"{i} → {o}" for i, o in zip(m["dec_inputs"], m["dec_outputs"])]
        rows, cols = {"encoder self": (m["source"], m["source"]),
                      "decoder self": (steps, m["dec_inputs"]),
                      "cross": (steps, m["source"])}[kind]
        return {"example": self.example.value, "kind": kind, "layer": layer, "head": head,
                "weights": m[kind][layer, head], "row_labels": rows, "col_labels": cols,
                "source": m["source"], "prediction": m["prediction"]}

    def draw(self, state: dict) -> Figure:
        title = _("{kind} attention, layer {layer}, head {head}").format(
            kind=_(KIND_NAMES[state["kind"]]), layer=state["layer"], head=state["head"])
        return draw_attention_map(state["weights"], state["row_labels"], state["col_labels"], title)

    def update(self) -> None:
        super().update()
        self.info.value = _("source: <b>{source}</b> &nbsp; → &nbsp; prediction: <b>{prediction}</b>").format(
            source=" ".join(self.state["source"]), prediction="".join(self.state["prediction"]))
