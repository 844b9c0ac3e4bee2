"""Chapter 8 widget: the head view of a real pretrained BERT.

Type sentence A (and optionally B), choose a layer, a head and a token, and see where the
token attends: on the left a two-column view (the tokens as queries on the left, as keys on
the right, one line per (query, key) pair, darker = more weight), on the right the head's
whole ``(queries, keys)`` weight matrix. A sentence-pair filter keeps only the attention
from one sentence to the other (``A→B``: queries in A, keys in B); ``[CLS]`` and the first
``[SEP]`` belong to A, the last ``[SEP]`` to B (their segment ids).

Layers and heads are counted **from 1** in the controls and titles, as in the survey table
(``L3.H5`` = block 3, head 5): layer ``l`` is ``model.encoder.blks[l - 1]``, whose output is
``hidden_states[l]`` (``hidden_states[0]`` is the embedding output).

Pure functions (tested directly): :func:`pair_mask`, :func:`head_view_data`. Draw functions:
:func:`draw_head_view`, :func:`draw_head_survey`. Widget: :class:`HeadView`.
"""
from __future__ import annotations

import ipywidgets as W
import numpy as np
import torch
from matplotlib.collections import LineCollection
from matplotlib.figure import Figure

from .._checks import check_choice, check_int, check_tensor
from ..inspection import PATTERNS, attention_maps
from ..pretrained_bert import Pretrained
from ..i18n import gettext as _, gettext_noop as N_
from . import FigureWidget
from .drawing import draw_heatmap

__all__ = ["PAIR_FILTERS", "ALL_TOKENS", "pair_mask", "head_view_data", "draw_head_view",
           "draw_head_survey", "HeadView"]

PAIR_FILTERS = ("all", "A→A", "A→B", "B→A", "B→B")
ALL_TOKENS = -1          # the token control's value that shows every query at once
# how the survey names the patterns of inspection.PATTERNS (the tokens [CLS] and [SEP] stay as they are)
PATTERN_NAMES = {"previous token": N_("previous token"), "next token": N_("next token")}


def _pair_name(which: str) -> str:
    """How the buttons and the messages name a pair filter: "all" in the learner's language, A→B as it is."""
    return _("all") if which == "all" else which


def pair_mask(segments, which: str) -> torch.Tensor:
    """Boolean ``(queries, keys)`` mask of the pairs a filter keeps.

    ``segments``: the segment id (0 = A, 1 = B) of each token. ``which``: one of
    :data:`PAIR_FILTERS`; ``"A→B"`` keeps queries in A attending to keys in B.
    """
    if which not in PAIR_FILTERS:
        raise ValueError(f"which must be one of {list(PAIR_FILTERS)}, got {which!r}")
    if isinstance(segments, str) or not isinstance(segments, (list, tuple, torch.Tensor)):
        raise TypeError(f"segments must be a list of 0/1 per token, got {type(segments).__name__} ({segments!r})")
    seg = torch.as_tensor(segments)
    if seg.dim() != 1:
        raise ValueError(f"segments must be a 1-D list of 0/1 per token, got shape {tuple(seg.shape)}")
    n = seg.shape[0]
    if which == "all":
        return torch.ones(n, n, dtype=torch.bool)
    src, dst = (0 if s == "A" else 1 for s in which.split("→"))
    return (seg == src).unsqueeze(1) & (seg == dst).unsqueeze(0)


def head_view_data(weights: torch.Tensor, segments, layer: int, head: int,
                   token: int = ALL_TOKENS, which: str = "all") -> dict:
    """What the head view shows, from ``weights`` ``(layers, heads, seq, seq)``.

    ``layer`` and ``head`` count from 1. Returns ``matrix`` (the head's ``(seq, seq)``
    weights with the pairs outside the filter set to 0), ``kept`` (the filter's mask),
    ``row`` (``matrix[token]``, or ``None`` for :data:`ALL_TOKENS`) and ``lines``: the
    ``(query, key, weight)`` triples drawn, i.e. every kept pair of the chosen query (or of
    all queries) with a weight above 0.
    """
    check_tensor("weights", weights, expected="(layers, heads, seq, seq)", floating=True)
    for name, value in (("layer", layer), ("head", head), ("token", token)):
        check_int(name, value)
    if weights.dim() != 4 or weights.shape[-1] != weights.shape[-2]:
        raise ValueError(f"weights must have shape (layers, heads, seq, seq), got shape {tuple(weights.shape)}")
    L, H, n, _ = weights.shape
    if not 1 <= layer <= L:
        raise ValueError(f"layer must be in 1..{L} (counted from 1), got {layer}")
    if not 1 <= head <= H:
        raise ValueError(f"head must be in 1..{H} (counted from 1), got {head}")
    if token != ALL_TOKENS and not 0 <= token < n:
        raise ValueError(f"token must be in 0..{n - 1} or ALL_TOKENS (-1), got {token}")
    kept = pair_mask(segments, which)
    if kept.shape[0] != n:
        raise ValueError(f"segments has {kept.shape[0]} entries but the weights cover {n} tokens")
    matrix = weights[layer - 1, head - 1].masked_fill(~kept, 0.0)
    queries = range(n) if token == ALL_TOKENS else [token]
    lines = [(i, j, float(matrix[i, j])) for i in queries for j in range(n) if matrix[i, j] > 0]
    return {"matrix": matrix, "kept": kept, "row": None if token == ALL_TOKENS else matrix[token],
            "lines": lines}


def draw_head_view(pieces: list[str], data: dict, token: int = ALL_TOKENS, title: str = "") -> Figure:
    """Two-column head view (``fig.axes[0]``: one ``LineCollection`` whose segment ``k`` joins
    query ``lines[k][0]`` on the left to key ``lines[k][1]`` on the right with alpha
    ``lines[k][2]``) and the head's weight matrix (``fig.axes[1].images[0]``; filtered-out
    pairs are masked and drawn grey)."""
    check_int("token", token, low=ALL_TOKENS, high=len(pieces) - 1)
    n = len(pieces)
    matrix, kept = data["matrix"], data["kept"]
    if tuple(matrix.shape) != (n, n):
        raise ValueError(f"data['matrix'] must have shape ({n}, {n}) for {n} pieces, got {tuple(matrix.shape)}")
    fig = Figure(figsize=(11, max(4.0, 0.22 * n + 1.2)))
    ax_lines, ax_map = fig.subplots(1, 2, gridspec_kw={"width_ratios": [0.9, 1.3]})

    y = np.arange(n)[::-1]                     # token 0 at the top
    segs = [[(0.0, y[i]), (1.0, y[j])] for i, j, _ in data["lines"]]
    colors = [(0.12, 0.35, 0.75, min(1.0, w)) for _, _, w in data["lines"]]
    ax_lines.add_collection(LineCollection(segs, colors=colors, linewidths=2.0))
    for i, p in enumerate(pieces):
        bold = "bold" if i == token else "normal"
        ax_lines.text(-0.03, y[i], p, ha="right", va="center", fontsize=9, fontweight=bold)
        ax_lines.text(1.03, y[i], p, ha="left", va="center", fontsize=9)
    ax_lines.set_xlim(-0.6, 1.6)
    ax_lines.set_ylim(-1, n)
    ax_lines.axis("off")
    ax_lines.set_title(_("queries (left) → keys (right)"), fontsize=10)

    draw_heatmap(ax_map, matrix, pieces, pieces, hidden=~kept, rotation=90)
    if token != ALL_TOKENS:
        ax_map.axhline(token - 0.5, color="crimson", lw=1.2)
        ax_map.axhline(token + 0.5, color="crimson", lw=1.2)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


def draw_head_survey(stats: dict) -> Figure:
    """One ``(layers, heads)`` heatmap per pattern of :func:`bertcourse.inspection.head_statistics`
    (``fig.axes[k].images[0]`` holds ``stats[PATTERNS[k]]``), layers and heads labelled from 1."""
    fig = Figure(figsize=(13, 5.5))
    axes = fig.subplots(2, 3).flatten()
    for ax, pattern in zip(axes, PATTERNS):
        L, H = stats[pattern].shape
        # shares lie in [0, 1]; an entropy has no such bound, so it gets its own colours and scale
        entropy = pattern == "entropy"
        name = _(PATTERN_NAMES[pattern]) if pattern in PATTERN_NAMES else pattern
        title = (_("entropy (nats): broad vs sharp") if entropy else
                 _("share of attention on {pattern}").format(pattern=name))
        draw_heatmap(ax, stats[pattern], [str(l + 1) for l in range(L)], [str(h + 1) for h in range(H)],
                     cmap="viridis" if entropy else "Blues", vmax=None if entropy else 1.0, rotation=0,
                     xlabel=_("head"), ylabel=_("layer"), title_size=10, colorbar=0.6, title=title)
    axes[-1].axis("off")
    fig.tight_layout()
    return fig


class HeadView(FigureWidget):
    """Sentence A/B, layer, head, token and pair filter -> head view + weight matrix.

    ``state`` keys: ``pieces``, ``segments``, ``layer``, ``head`` (from 1), ``token``
    (index or :data:`ALL_TOKENS`), ``pair``, ``weights`` (all ``(layers, heads, seq, seq)``
    maps of the current text), plus :func:`head_view_data`'s ``matrix``, ``kept``, ``row``
    and ``lines``, and ``message``.
    """

    def __init__(self, pretrained: Pretrained, text_a: str = "The cat sat on the mat.",
                 text_b: str = "It was very comfortable.", layer: int = 1, head: int = 1,
                 token: int = ALL_TOKENS, pair: str = "all"):
        if not isinstance(pretrained, Pretrained):
            raise TypeError(f"pretrained must be the result of load_pretrained(...), got {type(pretrained).__name__}")
        # the sliders would clamp a value out of their range silently: 1-based, as in the text
        check_int("layer", layer, low=1, high=pretrained.config.num_blks)
        check_int("head", head, low=1, high=pretrained.config.num_heads)
        check_choice("pair", pair, PAIR_FILTERS)
        check_int("token", token, low=ALL_TOKENS)
        self.pretrained = pretrained
        c = pretrained.config
        style = {"description_width": "80px"}
        wide = W.Layout(width="560px")
        self.text_a = W.Text(value=text_a, description=_("sentence A"), continuous_update=False,
                             style=style, layout=wide)
        self.text_b = W.Text(value=text_b, description=_("sentence B"), continuous_update=False,
                             style=style, layout=wide, placeholder=_("(optional)"))
        self.layer = W.IntSlider(value=layer, min=1, max=c.num_blks, description=_("layer"), style=style)
        self.head = W.IntSlider(value=head, min=1, max=c.num_heads, description=_("head"), style=style)
        self.token = W.Dropdown(options=[], description=_("token"), style=style)
        self.pair = W.ToggleButtons(options=[(_pair_name(f), f) for f in PAIR_FILTERS], value=pair,
                                    description=_("token pairs"), style=style)
        self.info = W.HTML()
        self._encode()
        self._refresh_tokens(token)
        super().__init__([self.text_a, self.text_b, self.layer, self.head, self.token, self.pair])
        self.widget = W.VBox([self.text_a, self.text_b, W.HBox([self.layer, self.head, self.token]),
                              self.pair, self.info, self.output])

    def _encode(self) -> None:
        """Run the model once per text; the controls only pick from these maps."""
        b = self.text_b.value if self.text_b.value.strip() else None
        a = self.text_a.value
        self._pieces, self._segments, self._weights = attention_maps(self.pretrained.model, self.pretrained.tokenizer, a, b)

    def _refresh_tokens(self, token: int) -> None:
        self.token.options = [(_("(all tokens)"), ALL_TOKENS)] + [(f"{i}: {p}", i) for i, p in enumerate(self._pieces)]
        self.token.value = token if token == ALL_TOKENS or token < len(self._pieces) else ALL_TOKENS

    def link(self, change) -> None:
        if change["owner"] in (self.text_a, self.text_b):
            self._encode()
            self._refresh_tokens(self.token.value)

    def compute(self) -> dict:
        layer, head, token, pair = self.layer.value, self.head.value, self.token.value, self.pair.value
        data = head_view_data(self._weights, self._segments, layer, head, token, pair)
        state = {"pieces": self._pieces, "segments": self._segments, "layer": layer, "head": head,
                 "token": token, "pair": pair, "weights": self._weights, **data}
        shown = _pair_name(pair)
        if not data["kept"].any():
            msg = (_("no pairs {pair}: type a sentence B") if 1 not in self._segments else
                   _("no pairs {pair}")).format(pair=shown)
        elif token == ALL_TOKENS:
            msg = _("layer {layer}, head {head}: every token's attention ({pair}); choose a token to follow "
                    "one.").format(layer=layer, head=head, pair=shown)
        elif not data["kept"][token].any():
            side = "A" if self._segments[token] == 0 else "B"
            msg = _("'{piece}' is in sentence {side}: the filter {pair} shows no query from it.").format(
                piece=self._pieces[token], side=side, pair=shown)
        else:
            row = data["row"]
            j = int(row.argmax())
            msg = _("layer {layer}, head {head}: '{piece}' (token {token}) attends most to '{key}' (token {j}, "
                    "weight {weight:.2f})").format(layer=layer, head=head, piece=self._pieces[token], token=token,
                                                   key=self._pieces[j], j=j, weight=float(row[j]))
            msg += _(".") if pair == "all" else _("; {share:.0%} of its attention is in the pairs {pair}.").format(
                share=float(row.sum()), pair=shown)
        state["message"] = msg
        return state

    def draw(self, state: dict) -> Figure:
        title = _("layer {layer}, head {head}, pairs {pair}").format(layer=state["layer"], head=state["head"],
                                                                     pair=_pair_name(state["pair"]))
        return draw_head_view(state["pieces"], state, state["token"], title)

    def update(self) -> None:
        super().update()
        self.info.value = f"<b>{self.state['message']}</b>"
