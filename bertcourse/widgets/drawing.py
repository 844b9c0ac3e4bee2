"""Drawing helpers shared by the chapters' widgets (matplotlib ``Figure`` objects only, no
pyplot state)."""
from __future__ import annotations

from matplotlib.figure import Figure

from .._checks import check_finite_number, check_positive_int

__all__ = ["ROW_WIDTH", "draw_message", "draw_tally", "token_layout"]

ROW_WIDTH = 96            # width of a row of token boxes, in characters


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
