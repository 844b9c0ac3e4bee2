"""Interactive widgets, one module per chapter (``bertcourse.widgets.attention`` …).

Every widget follows one pattern, so that it works on ipywidgets 7.7 (Colab) and 8 and
can be tested headlessly:

* pure functions compute what is shown (tested directly);
* thin ``draw_*`` functions turn that into a ``matplotlib.figure.Figure`` (no pyplot
  state, so nothing leaks between widgets or tests);
* a :class:`FigureWidget` subclass wires core ipywidgets controls to them. After every
  change it keeps the computed data in ``.state`` and the figure in ``.figure``; tests
  set a control's ``.value`` and assert on those.
"""
from __future__ import annotations

import base64
import io

import ipywidgets as W
from IPython.display import display
from matplotlib.layout_engine import PlaceHolderLayoutEngine

from .._checks import check_positive_int

__all__ = ["FigureWidget", "RepeatedDraws"]


def figure_html(fig, dpi: int = 90) -> str:
    """``fig`` as an ``<img>`` tag holding an inline base64 PNG (for an HTML widget)."""
    # ``fig.tight_layout()`` lays the figure out once and leaves a placeholder layout engine
    # behind; ``savefig`` draws any figure that has a layout engine twice (the first time to lay
    # it out). The layout is done, so drop the placeholder: the same pixels, one draw fewer
    # (the attention widget's PNG: 0.20 -> 0.15 s).
    if isinstance(fig.get_layout_engine(), PlaceHolderLayoutEngine):
        fig.set_layout_engine(None)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi)
    data = base64.b64encode(buffer.getvalue()).decode("ascii")
    return f'<img src="data:image/png;base64,{data}" style="max-width:100%"/>'


class FigureWidget:
    """Base class: controls on top, a matplotlib figure below, redrawn on every change.

    Subclasses create their controls in ``__init__`` (then call ``super().__init__(controls)``)
    and implement ``compute() -> dict`` (pure, uses the controls' values) and
    ``draw(state) -> Figure``; controls that depend on each other are kept consistent in
    ``link(change)``.
    """

    def __init__(self, controls: list):
        self.controls = controls
        # The figure is shown as an <img> inside an HTML widget, not displayed into an
        # Output widget: an Output widget captures by routing the kernel's display
        # messages, which nbval does not understand (a later cell that sets a control's
        # value would get the figure as an unexpected output), and whose behaviour
        # differs between Colab and Jupyter. An HTML value is plain widget state.
        self.output = W.HTML()
        self.output.add_class("bertcourse-figure")  # lets tests/test_browser.py find the figure
        self.widget = W.VBox([*controls, self.output])
        self.state: dict = {}
        self.figure = None
        self._linking = False
        for c in controls:
            if hasattr(c, "value"):
                c.observe(self._on_change, names="value")
        self.update()

    def compute(self) -> dict:  # pragma: no cover - abstract
        raise NotImplementedError

    def draw(self, state: dict):  # pragma: no cover - abstract
        raise NotImplementedError

    def link(self, change) -> None:
        """Keep the controls consistent after ``change`` (a traitlets change dict), e.g. a
        sentence chosen from a menu fills the text box. What this sets does not redraw by
        itself: the figure is redrawn once, after it."""

    def _on_change(self, change) -> None:
        if self._linking:            # a control that link() is setting: redraw once, at the end
            return
        self._linking = True
        try:
            self.link(change)
        finally:
            self._linking = False
        self.update()

    def update(self) -> None:
        """Recompute the state and redraw the figure into the output area."""
        import matplotlib.pyplot as plt      # lazy: a heavy import (CONTRIBUTING.md, "Imports")
        self.state = self.compute()
        if self.figure is not None:
            plt.close(self.figure)
        self.figure = self.draw(self.state)
        self.output.value = figure_html(self.figure)

    def _ipython_display_(self):
        display(self.widget)


class RepeatedDraws(FigureWidget):
    """A :class:`FigureWidget` whose buttons draw again (new masks, a new sentence pair).
    ``_draws`` counts the draws of the current setting, and the figure shows the last one:
    ``compute`` reads it, ``link`` sets it back to 1 when a setting changes."""

    _draws = 1

    def draw_more(self, n: int = 1) -> None:
        """Draw ``n`` more times (what the buttons do); the figure shows the last draw."""
        check_positive_int("n", n)
        self._draws += n
        self.update()

    def restart(self) -> None:
        """Back to the first draw of the current setting, as a new setting does: a cell that
        clicks the buttons from code prints the same every time it runs."""
        self._draws = 1
        self.update()
