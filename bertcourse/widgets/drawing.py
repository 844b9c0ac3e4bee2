"""Drawing helpers shared by the chapters' widgets (matplotlib ``Figure`` objects only, no
pyplot state)."""
from __future__ import annotations

from matplotlib.figure import Figure

__all__ = ["ROW_WIDTH", "draw_message", "token_layout"]

ROW_WIDTH = 96            # width of a row of token boxes, in characters


def draw_message(message: str, width: float = 11) -> Figure:
    """A small figure that only shows ``message`` (e.g. when there is nothing to draw)."""
    fig = Figure(figsize=(width, 1.2))
    ax = fig.add_subplot()
    ax.axis("off")
    ax.text(0.5, 0.5, message, ha="center", va="center", fontsize=12)
    return fig


def token_layout(widths, row_width: int = ROW_WIDTH) -> list:
    """Where to put boxes of the given widths (in characters) in rows of ``row_width``:
    a list of ``(row, x_centre)``, one per box, left to right, wrapping to a new row when
    the next box would not fit (a box wider than a row gets a row of its own).
    Each box takes its width plus 2 characters of padding."""
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
