"""Drawing helpers shared by the chapters' widgets (matplotlib ``Figure`` objects only, no
pyplot state)."""
from __future__ import annotations

import matplotlib
import numpy as np
import torch
from matplotlib.figure import Figure

from .._checks import check_finite_number, check_positive_int, check_tensor, shape_str
from ..i18n import gettext as _

__all__ = ["ROW_WIDTH", "SEGMENT_COLOURS", "draw_heatmap", "draw_message", "draw_tally", "token_layout"]

ROW_WIDTH = 96            # width of a row of token boxes, in characters
SEGMENT_COLOURS = {0: "#9ecae1", 1: "#fdae6b"}     # boxes of segment 0 ([CLS] A [SEP]): blue; 1 (B [SEP]): orange


def draw_message(message: str, width: float = 11) -> Figure:
    """A small figure that only shows ``message`` (e.g. when there is nothing to draw)."""
    check_finite_number("width", width, low=0, low_open=True)
    fig = Figure(figsize=(width, 1.2))
    ax = fig.add_subplot()
    ax.axis("off")
    ax.text(0.5, 0.5, message, ha="center", va="center", fontsize=12)
    return fig


def draw_tally(ax, labels: list, shares: list, counts: list, expected: list, colours: list,
               ylabel: str, title: str, top: float = 1.1) -> None:
    """A running tally on ``ax``: one bar per outcome (its share of the draws, its count on
    top) and a dashed line at the share the rule promises, so the bars can be seen closing in."""
    lengths = {name: len(v) for name, v in (("labels", labels), ("shares", shares), ("counts", counts),
                                            ("expected", expected), ("colours", colours))}
    if len(set(lengths.values())) != 1:
        raise ValueError(f"labels, shares, counts, expected and colours must have one entry per bar, "
                         f"got lengths {lengths}")
    ax.bar(range(len(labels)), shares, color=colours, edgecolor="#333333")
    for x, (share, count, promised) in enumerate(zip(shares, counts, expected)):
        ax.plot([x - 0.4, x + 0.4], [promised] * 2, "k--", lw=1)
        ax.text(x, share + 0.03, str(count), ha="center", fontsize=8)
    ax.set_xticks(range(len(labels)), labels, fontsize=8)
    ax.set_ylim(0, top)
    ax.set_ylabel(ylabel, fontsize=8)
    ax.set_title(title, fontsize=9)


def draw_heatmap(ax, weights, row_labels: list, col_labels: list, *, hidden=None,
                 cmap: str = "Blues", vmax: float | None = 1.0, fontsize: float = 8,
                 rotation: float = 60, xlabel: str | None = None, ylabel: str | None = None,
                 title: str = "", title_size: float | str = "large", colorbar: float | None = 1.0):
    """Draw ``weights`` ``(queries, keys)`` as a heat map on ``ax``, one labelled cell per
    weight, and return the image (``ax.images[0]``).

    ``row_labels`` (one per query) go down the left, ``col_labels`` (one per key) along the
    bottom, turned by ``rotation`` degrees. The colours run from 0 to ``vmax`` (None: to the
    largest weight). ``hidden``: an optional bool ``(queries, keys)`` tensor of cells drawn
    grey instead (pairs left out). ``xlabel``/``ylabel``: None (the default) for "keys"/"queries"
    in the learner's language; ``xlabel``/``ylabel``/``title``: "" for none; ``title_size``
    is matplotlib's own default size for a title, "large", unless given.
    ``colorbar``: the colour bar's length as a share of the map's height, None for none.
    """
    check_tensor("weights", weights, ndim=2, expected="(queries, keys)", floating=True)
    q, k = weights.shape
    if len(row_labels) != q or len(col_labels) != k:
        raise ValueError(f"need {q} row labels and {k} column labels (row_labels, col_labels) for weights "
                         f"of shape {shape_str(weights)}, got {len(row_labels)} and {len(col_labels)}")
    mask = False
    if hidden is not None:
        check_tensor("hidden", hidden, ndim=2, expected=f"{shape_str(weights)} (bool)")
        if hidden.dtype != torch.bool or hidden.shape != weights.shape:
            raise ValueError(f"hidden must be a bool tensor of shape {shape_str(weights)} (one entry per "
                             f"weight), got {hidden.dtype} of shape {shape_str(hidden)}")
        mask = hidden.cpu().numpy()
    # a masked cell takes the colour map's "bad" colour, a light grey: a pair left out must not
    # look like a weight of 0 (white)
    shown = np.ma.masked_array(weights.detach().cpu().numpy(), mask=mask)
    colours = matplotlib.colormaps[cmap].with_extremes(bad="0.85")
    im = ax.imshow(shown, cmap=colours, vmin=0.0, vmax=vmax)
    # slanted labels end under their tick; upright or vertical ones are centred on it
    ha = "right" if 0 < rotation < 90 else "center"
    ax.set_xticks(range(k), col_labels, rotation=rotation, ha=ha, fontsize=fontsize)
    ax.set_yticks(range(q), row_labels, fontsize=fontsize)
    xlabel = _("keys") if xlabel is None else xlabel
    ylabel = _("queries") if ylabel is None else ylabel
    # an empty label or title would still be laid out; only set the ones asked for
    if xlabel:
        ax.set_xlabel(xlabel)
    if ylabel:
        ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title, fontsize=title_size)
    if colorbar is not None:
        ax.figure.colorbar(im, ax=ax, fraction=0.046, pad=0.04, shrink=colorbar)
    return im


def token_layout(widths, row_width: int = ROW_WIDTH) -> list:
    """Where to put boxes of the given widths (in characters) in rows of ``row_width``:
    a list of ``(row, x_centre)``, one per box, left to right, wrapping to a new row when
    the next box would not fit (a box wider than a row gets a row of its own).
    Each box takes its width plus 2 characters of padding."""
    check_positive_int("row_width", row_width)
    out, row, x = [], 0, 0.0
    for w in widths:
        if isinstance(w, bool) or not isinstance(w, int) or w < 0:
            raise ValueError(f"widths must be ints >= 0, got {w!r}")
        span = w + 2
        if x > 0 and x + span > row_width:
            row, x = row + 1, 0.0
        out.append((row, x + span / 2))
        x += span
    return out
