"""Guess, then see: the measurement a prediction exercise asks about, folded until a guess.

A "predict, then run" exercise asks the learner to guess a measurement; the cell after it
shows the measurement. The notebooks are committed executed, so that cell's output would
sit right under the question, giving the answer away. :class:`Reveal` is what such a cell
shows instead: while the exercise has seen no guess in this kernel, the measurement is
folded in a collapsed ``<details>`` element (one click opens it, so the book, built from
the committed outputs where nothing can be run, has it too), and its plain-text form says
only how to see it; after a guess (``qN.check()`` with an answer in place of ``...``), the
same cell shows it open. ``Exercise.reveal(*parts)`` builds one.
"""
from __future__ import annotations

import base64
import html
import io

from ..i18n import gettext as _


def _html_of(part) -> str:
    """One part as HTML: text in a ``<pre>``, a matplotlib figure as a PNG, a table as itself."""
    if isinstance(part, str):
        return f"<pre>{html.escape(part)}</pre>"
    if hasattr(part, "savefig"):                 # a matplotlib Figure
        buffer = io.BytesIO()
        part.savefig(buffer, format="png", bbox_inches="tight")
        data = base64.b64encode(buffer.getvalue()).decode("ascii")
        return f'<img src="data:image/png;base64,{data}"/>'
    return part._repr_html_()


def _text_of(part) -> str:
    return part if isinstance(part, str) else (part.to_string() if hasattr(part, "to_string") else repr(part))


def _check_parts(parts: tuple) -> tuple:
    """``parts`` of a :class:`Reveal`: each a str, a matplotlib figure or an object with
    ``_repr_html_`` (a pandas table); a TypeError names the first that is not."""
    if not parts:
        raise TypeError("Reveal needs at least one part to show (text, a figure or a table), got none")
    for i, part in enumerate(parts):
        if not (isinstance(part, str) or hasattr(part, "savefig") or hasattr(part, "_repr_html_")):
            raise TypeError(f"Reveal's parts must be str, a matplotlib figure or an object with "
                            f"_repr_html_ (a pandas table); part {i} is a {type(part).__name__}")
    return parts


class Reveal:
    """The measurement of a prediction exercise (``exercise``), shown open once it has a guess.

    ``guessed`` is read when the object is displayed: the state of the exercise at the moment
    the cell runs."""

    def __init__(self, exercise, parts: tuple):
        self.exercise, self.parts = exercise, _check_parts(parts)

    @property
    def guessed(self) -> bool:
        return self.exercise.guessed

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        body = "".join(_html_of(p) for p in self.parts)
        if self.guessed:
            return {"text/plain": "\n".join(_text_of(p) for p in self.parts),
                    "text/html": f"<div>{body}</div>"}
        summary = _("The measurement: open it once you have made your guess above")
        plain = _("[the measurement stays folded until you have made your guess: set `{var}`, run the "
                  "check above, then run this cell again]").format(var=self.exercise.var)
        return {"text/plain": plain,
                "text/html": f"<details><summary>{html.escape(summary)}</summary>{body}</details>"}

    def __repr__(self) -> str:
        return self._repr_mimebundle_()["text/plain"]
