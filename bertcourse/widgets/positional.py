"""Chapter 2 widget: the positional-encoding explorer, and the chapter's static figures.

Choose a model width ``d``, a position and a range of dimensions, and see

1. the encoding vector of that position (one bar per chosen dimension);
2. the whole position × dimension table with that position's row outlined;
3. the dot-product similarity ``P[i] · P[pos]`` of every position ``i`` to the chosen one
   (over the chosen dimensions): it peaks at the position itself and depends only on the
   distance ``|i - pos|``.

Pure functions (tested directly): :func:`encoding_view`, :func:`binary_table`.
Draw functions: :func:`draw_explorer`, :func:`draw_sinusoids`, :func:`draw_heatmap`,
:func:`draw_binary_analogy`, :func:`draw_similarity`. Widget: :class:`PositionalEncodingExplorer`.
"""
from __future__ import annotations

import ipywidgets as W
import numpy as np
import torch
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from .._checks import check_int, check_positive_int
from ..positional import sinusoidal_encoding
from ..i18n import gettext as _
from . import FigureWidget

__all__ = ["WIDTHS", "encoding_view", "binary_table", "draw_explorer", "draw_sinusoids",
           "draw_heatmap", "draw_binary_analogy", "draw_similarity", "PositionalEncodingExplorer"]

WIDTHS = [8, 16, 32, 64, 128]


def encoding_view(num_hiddens: int, position: int, dims: tuple[int, int], max_len: int = 100) -> dict:
    """What the explorer shows, as numbers.

    Returns a dict with ``P`` (``(max_len, num_hiddens)`` table), ``position``, ``dims``
    (``(first, last)``, inclusive), ``columns`` (the chosen column indices), ``vector``
    (``P[position, first..last]``) and ``similarity`` (``(max_len,)``: the dot products
    ``P[i, first..last] · P[position, first..last]`` for every position ``i``).
    """
    check_positive_int("num_hiddens", num_hiddens)
    check_positive_int("max_len", max_len)
    check_int("position", position)
    if not (isinstance(dims, (tuple, list)) and len(dims) == 2
            and all(isinstance(d, int) and not isinstance(d, bool) for d in dims)):
        raise TypeError(f"dims must be a pair of ints (first, last), got {type(dims).__name__} ({dims!r})")
    if not 0 <= position < max_len:
        raise ValueError(f"position must be in [0, max_len - 1 = {max_len - 1}], got {position}")
    lo, hi = dims
    if not 0 <= lo <= hi < num_hiddens:
        raise ValueError(f"dims must be (first, last) with 0 <= first <= last < num_hiddens="
                         f"{num_hiddens}, got {dims}")
    P = sinusoidal_encoding(max_len, num_hiddens)
    block = P[:, lo: hi + 1]                                   # (max_len, chosen dims)
    return {"P": P, "num_hiddens": num_hiddens, "position": position, "dims": (lo, hi),
            "columns": list(range(lo, hi + 1)), "vector": block[position].clone(),
            "similarity": block @ block[position]}


def binary_table(num_positions: int, num_bits: int) -> torch.Tensor:
    """``(num_positions, num_bits)``: the binary digits of 0, 1, 2, ..., lowest bit first
    (column 0 flips every step, column 1 every 2 steps, column 2 every 4, ...)."""
    check_positive_int("num_positions", num_positions)
    check_positive_int("num_bits", num_bits)
    n = torch.arange(num_positions).unsqueeze(1)
    return ((n >> torch.arange(num_bits)) & 1).float()


def draw_explorer(state: dict) -> Figure:
    """Three panels: ``fig.axes[0]`` bars of the vector (``patches``), ``fig.axes[1]`` the
    table (``images[0]``, the chosen columns) with the row outlined (``patches[0]``),
    ``fig.axes[2]`` the similarity curve (``lines[0]``)."""
    P, pos, (lo, hi) = state["P"], state["position"], state["dims"]
    cols = state["columns"]
    fig = Figure(figsize=(12, 3.8))
    ax_vec, ax_map, ax_sim = fig.subplots(1, 3, gridspec_kw={"width_ratios": [1.1, 1, 1.2]})

    ax_vec.bar(cols, state["vector"].numpy(), color=["tab:blue" if c % 2 == 0 else "tab:orange" for c in cols])
    ax_vec.set_ylim(-1.05, 1.05)
    ax_vec.axhline(0, color="gray", linewidth=0.5)
    ax_vec.set_xlabel(_("dimension (blue: sin, orange: cos)"))
    ax_vec.set_title(f"P[{pos}, {lo}..{hi}]")

    block = P[:, lo: hi + 1].numpy()
    ax_map.imshow(block, aspect="auto", cmap="RdBu_r", vmin=-1, vmax=1, interpolation="nearest",
                  extent=(lo - 0.5, hi + 0.5, P.shape[0] - 0.5, -0.5))
    ax_map.add_patch(Rectangle((lo - 0.5, pos - 0.5), hi - lo + 1, 1, fill=False,
                               edgecolor="black", linewidth=2))
    ax_map.set_xlabel(_("dimension"))
    ax_map.set_ylabel(_("position"))
    ax_map.set_title(_("table, d = {d} (row {pos} outlined)").format(d=state["num_hiddens"], pos=pos))

    sim = state["similarity"].numpy()
    ax_sim.plot(np.arange(len(sim)), sim, color="tab:purple")
    ax_sim.axvline(pos, color="black", linestyle="--", linewidth=1)
    ax_sim.set_xlabel(_("position i"))
    ax_sim.set_title(_("P[i] · P[{pos}] over dims {lo}..{hi}").format(pos=pos, lo=lo, hi=hi))
    fig.tight_layout()
    return fig


def draw_sinusoids(P: torch.Tensor, columns: list[int]) -> Figure:
    """Columns of the table over positions, one line each (``fig.axes[0].lines``)."""
    fig = Figure(figsize=(9, 3.4))
    ax = fig.add_subplot()
    for c in columns:
        kind = "sin" if c % 2 == 0 else "cos"
        ax.plot(P[:, c].numpy(), label=_("col {c} ({kind})").format(c=c, kind=kind))
    ax.set_xlabel(_("position i"))
    ax.set_ylabel(_("P[i, col]"))
    ax.set_title(_("low columns turn fast, high columns slowly"))
    ax.legend(loc="upper right", fontsize=8, ncol=2)
    fig.tight_layout()
    return fig


def draw_heatmap(P: torch.Tensor, title: str | None = None) -> Figure:
    """The full position × dimension table (``fig.axes[0].images[0]``); ``title`` None: "sinusoidal
    positional encoding", in the learner's language."""
    fig = Figure(figsize=(8, 4))
    ax = fig.add_subplot()
    im = ax.imshow(P.numpy(), aspect="auto", cmap="RdBu_r", vmin=-1, vmax=1, interpolation="nearest")
    ax.set_xlabel(_("dimension (column)"))
    ax.set_ylabel(_("position (row)"))
    ax.set_title(_("sinusoidal positional encoding") if title is None else title)
    fig.colorbar(im, ax=ax)
    fig.tight_layout()
    return fig


def draw_binary_analogy(num_positions: int = 64, num_bits: int = 6, num_hiddens: int = 32) -> Figure:
    """Binary digits of 0..n-1 (lowest bit on the left) next to the table ``P``: in both,
    the columns on the left change fast and those on the right slowly.
    ``fig.axes[0].images[0]`` holds the bits, ``fig.axes[1].images[0]`` the table."""
    bits = binary_table(num_positions, num_bits)
    P = sinusoidal_encoding(num_positions, num_hiddens)
    fig = Figure(figsize=(10, 4))
    ax_bits, ax_sin = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1, 1.6]})
    ax_bits.imshow(bits.numpy(), aspect="auto", cmap="Greys", vmin=0, vmax=1, interpolation="nearest")
    ax_bits.set_xticks(range(num_bits), [f"2^{b}" for b in range(num_bits)])
    ax_bits.set_xlabel(_("bit (black = 1)"))
    ax_bits.set_ylabel(_("position (the number)"))
    ax_bits.set_title(_("binary digits, lowest first"))
    ax_sin.imshow(P.numpy(), aspect="auto", cmap="RdBu_r", vmin=-1, vmax=1, interpolation="nearest")
    ax_sin.set_xlabel(_("dimension"))
    ax_sin.set_title(_("sinusoidal table P (d = {d})").format(d=num_hiddens))
    fig.tight_layout()
    return fig


def draw_similarity(tables: dict) -> Figure:
    """Side-by-side ``P P^T`` similarity matrices of several tables (name -> ``(n, d)`` tensor)."""
    fig = Figure(figsize=(4.2 * len(tables), 3.8))
    axes = fig.subplots(1, len(tables), squeeze=False)[0]
    for ax, (name, T) in zip(axes, tables.items()):
        S = (T @ T.T).detach().numpy()
        im = ax.imshow(S, cmap="viridis", interpolation="nearest")
        ax.set_title(name)
        ax.set_xlabel(_("position j"))
        ax.set_ylabel(_("position i"))
        fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
    fig.tight_layout()
    return fig


class PositionalEncodingExplorer(FigureWidget):
    """Sliders for the model width, the position and the dimension range.

    ``state`` is :func:`encoding_view`'s dict for the current controls.
    """

    def __init__(self, num_hiddens: int = 64, position: int = 10, max_len: int = 100):
        check_positive_int("max_len", max_len)
        check_int("position", position, low=0, high=max_len - 1)
        if num_hiddens not in WIDTHS:
            raise ValueError(f"num_hiddens must be one of {WIDTHS}, got {num_hiddens}")
        style = {"description_width": "110px"}
        self.max_len = max_len
        self.width = W.Dropdown(options=WIDTHS, value=num_hiddens, description=_("model width d"),
                                style=style)
        self.position = W.IntSlider(value=position, min=0, max=max_len - 1, description=_("position"),
                                    style=style, continuous_update=False)
        self.dims = W.IntRangeSlider(value=(0, num_hiddens - 1), min=0, max=num_hiddens - 1,
                                     description=_("dimensions"), style=style, continuous_update=False)
        super().__init__([self.width, self.position, self.dims])

    def link(self, change) -> None:
        if change["owner"] is self.width:
            # keep the range inside the new width: shrink the value before the bound
            last = change["new"] - 1
            lo, hi = self.dims.value
            if change["new"] < change["old"]:
                self.dims.value = (min(lo, last), min(hi, last))
                self.dims.max = last
            else:
                self.dims.max = last
                if hi == change["old"] - 1:       # showed everything: keep showing everything
                    self.dims.value = (lo, last)

    def compute(self) -> dict:
        d = self.width.value
        lo, hi = self.dims.value
        lo, hi = min(lo, d - 1), min(hi, d - 1)
        return encoding_view(d, self.position.value, (lo, hi), self.max_len)

    def draw(self, state: dict) -> Figure:
        return draw_explorer(state)
