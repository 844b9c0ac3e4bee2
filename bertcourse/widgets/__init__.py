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

import ipywidgets as W
from IPython.display import display

__all__ = ["FigureWidget"]


class FigureWidget:
    """Base class: controls on top, a matplotlib figure below, redrawn on every change.

    Subclasses create their controls in ``__init__`` (then call ``super().__init__(controls)``)
    and implement ``compute() -> dict`` (pure, uses the controls' values) and
    ``draw(state) -> Figure``.
    """

    def __init__(self, controls: list):
        self.controls = controls
        self.output = W.Output()
        self.widget = W.VBox([*controls, self.output])
        self.state: dict = {}
        self.figure = None
        for c in controls:
            if hasattr(c, "value"):
                c.observe(self._on_change, names="value")
        self.update()

    def compute(self) -> dict:  # pragma: no cover - abstract
        raise NotImplementedError

    def draw(self, state: dict):  # pragma: no cover - abstract
        raise NotImplementedError

    def _on_change(self, change) -> None:
        self.update()

    def update(self) -> None:
        """Recompute the state and redraw the figure into the output area."""
        import matplotlib.pyplot as plt
        self.state = self.compute()
        if self.figure is not None:
            plt.close(self.figure)
        self.figure = self.draw(self.state)
        self.output.clear_output(wait=True)
        with self.output:
            display(self.figure)

    def _ipython_display_(self):
        display(self.widget)
