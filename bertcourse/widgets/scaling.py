"""Chapter 14 widget: data parallelism, one epoch at a glance.

Choose the number of processes N and the batch of each process: the figure deals the epoch's
batches out to the processes as :func:`bertcourse.batching.shard_batches` does (rank ``r``
gets batches ``r, r + N, ...``; the last ``batches % N`` are left out) and shows one optimizer
step per column, one process per row. The text says what changes: the global batch (N times
the per-process batch), the optimizer steps per epoch (N times fewer), and the learning rate
to start from: sqrt(N) times the one-process rate for AdamW, the course's optimizer (the
square-root rule, Malladi et al., 2022), N times for SGD (the linear rule, Goyal et al., 2017).

Pure functions (tested directly): :func:`epoch_layout`. Draw functions: :func:`draw_epoch`,
and :func:`draw_data_parallelism` (the chapter's picture of one data-parallel step). Widget:
:class:`DataParallelPlanner`.
"""
from __future__ import annotations

import math

import ipywidgets as W
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from .._checks import check_finite_number, check_int, check_positive_int
from ..batching import shard_batches
from ..distributed import data_parallel_plan
from ..i18n import gettext as _
from . import FigureWidget

__all__ = ["RANK_COLOURS", "epoch_layout", "draw_epoch", "draw_data_parallelism", "DataParallelPlanner"]

RANK_COLOURS = ["#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#eeca3b", "#b279a2", "#9d755d"]
LEFT_OUT = "#d0d0d0"


def epoch_layout(num_pairs: int, batch_size: int, world_size: int, base_lr: float = 5e-3) -> dict:
    """One epoch of ``num_pairs`` pairs dealt out to ``world_size`` processes of ``batch_size``:

    ``grid[rank][step]`` is the batch (its index in the epoch's order) that process ``rank``
    uses in optimizer step ``step``; ``left_out`` the batches not used this epoch; plus the
    numbers of :func:`bertcourse.distributed.data_parallel_plan`, and the learning rates to
    start from for a run whose ``base_lr`` suited one process: ``lr``, ``base_lr`` times
    ``sqrt(world_size)`` (the square-root rule, for AdamW: the course's optimizer), and
    ``lr_sgd``, ``base_lr`` times ``world_size`` (the linear rule, for SGD).
    """
    check_positive_int("num_pairs", num_pairs)
    check_finite_number("base_lr", base_lr, low=0, low_open=True)
    check_positive_int("world_size", world_size)
    plan = data_parallel_plan(num_pairs, batch_size, world_size)
    order = list(range(plan["batches"]))
    grid = [shard_batches(order, world_size, rank) for rank in range(world_size)]
    used = {b for row in grid for b in row}
    return {**plan, "num_pairs": num_pairs, "batch_size": batch_size, "world_size": world_size,
            "grid": grid, "left_out": [b for b in order if b not in used],
            "lr": base_lr * math.sqrt(world_size), "lr_sgd": base_lr * world_size}


def draw_epoch(layout: dict, max_steps: int = 40) -> Figure:
    """One row per process, one column per optimizer step (the first ``max_steps``), each
    cell a batch coloured by its process; the left-out batches in grey at the end.

    ``fig.axes[0].patches``: the cells, row by row (rank 0 first), then the left-out ones.
    """
    check_positive_int("max_steps", max_steps)
    n, steps = layout["world_size"], layout["steps_per_epoch"]
    shown = min(steps, max_steps)
    fig = Figure(figsize=(11, 1.6 + 0.42 * n))
    ax = fig.subplots()
    for rank, row in enumerate(layout["grid"]):
        for step, b in enumerate(row[:shown]):
            ax.add_patch(Rectangle((step, n - 1 - rank), 0.9, 0.85, facecolor=RANK_COLOURS[rank % len(RANK_COLOURS)],
                                   edgecolor="white"))
            if shown <= 20:          # the batch's place in the epoch: dealt out like cards
                ax.text(step + 0.45, n - 1 - rank + 0.42, str(b), ha="center", va="center", fontsize=7,
                        color="white")
        ax.text(-0.4, n - 1 - rank + 0.42, _("rank {r}").format(r=rank), ha="right", va="center", fontsize=9)
    x = shown + (1.2 if shown < steps else 0.4)
    if shown < steps:
        ax.text(shown + 0.3, n / 2, "…", fontsize=14, va="center")
    for i, b in enumerate(layout["left_out"]):
        ax.add_patch(Rectangle((x + i, n - 1), 0.9, 0.85, facecolor=LEFT_OUT, edgecolor="white", hatch="//"))
        if shown <= 20:
            ax.text(x + i + 0.45, n - 1 + 0.42, str(b), ha="center", va="center", fontsize=7)
    if layout["left_out"]:
        ax.text(x, n - 0.05 + 0.1, _("left out"), fontsize=8, va="bottom")
    ax.set_xlim(-3.2, x + max(len(layout["left_out"]), 1) + 0.5)
    ax.set_ylim(-0.3, n + 0.6)
    ax.axis("off")
    title = (_("{pairs:,} pairs, {n} processes x {b} pairs: global batch {g:,}, {steps:,} optimizer steps per epoch")
             if n > 1 else
             _("{pairs:,} pairs, {n} process x {b} pairs: global batch {g:,}, {steps:,} optimizer steps per epoch"))
    title = title.format(pairs=layout["num_pairs"], n=n, b=layout["batch_size"], g=layout["global_batch"], steps=steps)
    ax.set_title(title + (_(" (first {shown} shown)").format(shown=shown) if shown < steps else ""),
                 fontsize=10, loc="left")
    ax.annotate("", xy=(min(shown, 6), -0.2), xytext=(0, -0.2),
                arrowprops=dict(arrowstyle="->", color="#555555"))
    ax.text(0, -0.28, _("optimizer steps: one column = one step, the processes' gradients averaged"),
            fontsize=8, va="top", color="#555555")
    fig.tight_layout()
    return fig


def draw_data_parallelism(world_size: int = 2) -> Figure:
    """One data-parallel step in a picture: each rank's shard of the global batch, its own
    forward and backward pass on the same weights, the gradient all-reduce (the mean), and
    the same update everywhere.

    ``fig.axes[0].texts`` holds the labels; one "rank r" box per rank.
    """
    check_positive_int("world_size", world_size)
    if world_size > 4:
        raise ValueError(f"world_size must be at most 4 for a readable picture, got {world_size}")
    n = world_size
    fig = Figure(figsize=(11, 1.2 + 1.25 * n))
    ax = fig.subplots()

    def box(x, y, w, text, colour, **kw):
        ax.add_patch(Rectangle((x, y), w, 0.8, facecolor=colour, edgecolor="#444444", lw=0.8))
        ax.text(x + w / 2, y + 0.4, text, ha="center", va="center", fontsize=8.5, **kw)

    def arrow(x0, x1, y):
        ax.annotate("", xy=(x1, y), xytext=(x0, y), arrowprops=dict(arrowstyle="->", color="#444444"))

    top = n * 1.2
    for r in range(n):
        y = top - 1.2 * (r + 1)
        colour = RANK_COLOURS[r]
        ax.text(-0.2, y + 0.4, _("rank {r}").format(r=r), ha="right", va="center", fontsize=9, fontweight="bold",
                color=colour)
        box(0, y, 2.2, _("shard {r}:\nbatches {r}, {r2}, {r3}, ...").format(r=r, r2=r + n, r3=r + 2 * n), colour,
            color="white")
        arrow(2.25, 2.75, y + 0.4)
        box(2.8, y, 2.3, _("forward + backward\n(same weights W)"), "#f2f2f2")
        arrow(5.15, 5.65, y + 0.4)
        box(5.7, y, 1.3, _("gradient g{r}").format(r=r), "#ffffff")
        arrow(8.95, 9.45, y + 0.4)
        box(9.5, y, 2.2, _("W -= lr * update(g)\n(the same step)"), "#f2f2f2")
    ax.add_patch(Rectangle((7.15, 0.05), 1.7, top - 0.5, facecolor="#fff3cd", edgecolor="#b58900", lw=1))
    ax.text(8.0, top / 2 - 0.2, _("all-reduce\n(mean)") + "\n\ng = (" + " + ".join(f"g{r}" for r in range(n))
            + f") / {n}", ha="center", va="center", fontsize=9)
    for r in range(n):
        y = top - 1.2 * (r + 1) + 0.4
        arrow(7.0, 7.15, y)
    ax.set_xlim(-1.2, 11.9)
    ax.set_ylim(-0.2, top + 0.2)
    ax.axis("off")
    title = _("One data-parallel step, {n} processes: a global batch of {n} batches, one shared update").format(n=n)
    ax.set_title(title, fontsize=10, loc="left")
    fig.tight_layout()
    return fig


class DataParallelPlanner(FigureWidget):
    """Sliders for the number of processes and the per-process batch -> the epoch dealt out.

    ``state``: the dict of :func:`epoch_layout` plus ``message`` (the summary shown above
    the figure).
    """

    def __init__(self, num_pairs: int = 28606, world_size: int = 2, batch_size: int = 128, base_lr: float = 5e-3):
        check_int("world_size", world_size, low=1, high=8)     # the controls' ranges
        check_int("batch_size", batch_size)
        if batch_size not in (16, 32, 64, 128, 256, 512):
            raise ValueError(f"batch_size must be one of 16, 32, 64, 128, 256, 512 (the slider's choices), "
                             f"got {batch_size}")
        check_finite_number("base_lr", base_lr, low=0, low_open=True)
        check_positive_int("num_pairs", num_pairs)
        self.num_pairs, self.base_lr = num_pairs, base_lr
        style = {"description_width": "150px"}
        self.world_size = W.IntSlider(value=world_size, min=1, max=8, description=_("processes N"), style=style)
        self.batch_size = W.SelectionSlider(options=[16, 32, 64, 128, 256, 512], value=batch_size,
                                            description=_("batch per process"), style=style)
        self.info = W.HTML()
        super().__init__([self.world_size, self.batch_size])
        self.widget = W.VBox([self.world_size, self.batch_size, self.info, self.output])

    def compute(self) -> dict:
        state = epoch_layout(self.num_pairs, self.batch_size.value, self.world_size.value, self.base_lr)
        state["message"] = _("global batch {batch:,} pairs; {steps:,} steps per epoch; {left} batch(es) left out; "
                             "learning rate to start from: {lr:.3g} for AdamW (square-root rule; SGD's linear "
                             "rule: {lr_sgd:.3g})").format(
            batch=state["global_batch"], steps=state["steps_per_epoch"], left=len(state["left_out"]), lr=state["lr"],
            lr_sgd=state["lr_sgd"])
        return state

    def draw(self, state: dict) -> Figure:
        self.info.value = f"<b>{state['message']}</b>"
        return draw_epoch(state)
