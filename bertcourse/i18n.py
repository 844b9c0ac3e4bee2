"""The language the package speaks to the learner: English (the default) or Chinese.

This module is the run-time side only, what the learner's kernel needs: one switch, read
when the text is produced (exercise feedback when ``check()`` runs, widget labels when a
widget is built)::

    import bertcourse
    bertcourse.i18n.set_language("zh")

Learner-facing strings are written in English in the code and wrapped for gettext:

* ``_("...")`` (this module's :func:`gettext`, imported as ``_``) translates now;
* ``N_("...")`` (:func:`gettext_noop`) only marks a string that is stored at import
  time (an exercise's name, hints, solution, a case's description) and translated where
  it is shown. A diagnosis's message is its function's docstring, translated the same way.

Placeholders stay in the msgid and are filled after translating:
``_("expected {n} parameters").format(n=n)``, never ``_(f"...")``.

The Chinese catalog, ``locale/zh/LC_MESSAGES/bertcourse.po``, is package data read with
:mod:`polib` through :mod:`importlib.resources`, so an install from git needs no build
step. Its upkeep (finding the marked strings, adding new ones, retiring old ones, checking
that every one is translated) is the job of the course's translation tool, ``tools/i18n.py``
(``python tools/i18n.py update package``, ``python tools/i18n.py check``), not of this module.
This module imports no torch, and nothing from the rest of the package, so every layer may
import it.

Plots: Colab and Binder have no Chinese font, so the package ships one, ``fonts/``
(``FONT_FAMILY``, a subset of Noto Sans CJK SC holding the characters of the catalogs; its
licence and how it was made are in ``fonts/ATTRIBUTION.md``). ``set_language("zh")``
registers it with matplotlib (:func:`register_chinese_font`) as a *fallback*, last in
``rcParams["font.family"]``: the plot's own font (DejaVu Sans) still draws every character it
has, the Chinese font only those it lacks. matplotlib is imported there, not at import time.

Columns: a Chinese character takes two columns of a terminal or a notebook's text output, but
Python counts it as one. So that padded labels line up, what :func:`gettext` and :func:`tr`
return in Chinese pads by display width (``f"{label:12s}"``: :class:`Text`), and
``set_language("zh")`` turns on pandas' ``display.unicode.east_asian_width`` when pandas is
installed (it is imported then, on the Chinese side only).
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import importlib.resources
import os
import re
import unicodedata
import warnings

import polib

__all__ = ["FONT_FAMILY", "LANGUAGES", "LANGUAGE_VARIABLE", "Text", "display_width", "get_language", "gettext",
           "gettext_noop", "register_chinese_font", "set_language", "tr", "tr_table"]

LANGUAGES = ("en", "zh")
"""The languages :func:`set_language` accepts: the source language first."""
DOMAIN = "bertcourse"
FONT_FAMILY = "Bertcourse Sans SC"
"""The family name of the Chinese font that ships in ``bertcourse/fonts`` (tools/make_font_subset.py)."""
FONT_FILE = "BertcourseSansSC-Regular.otf"

LANGUAGE_VARIABLE = "BERTCOURSE_LANG"
"""The environment variable that carries the language to the programs a kernel starts (the
commands, ``torchrun``'s workers): :func:`set_language` sets it, this module reads it at import
(``BERTCOURSE_LANG=zh python -m bertcourse.pretrain ...`` speaks Chinese in a terminal too)."""


def _language_from_environment() -> str:
    value = os.environ.get(LANGUAGE_VARIABLE, "")
    if value and value not in LANGUAGES:
        warnings.warn(f"{LANGUAGE_VARIABLE} must be one of {list(LANGUAGES)}, got {value!r}: speaking English",
                      stacklevel=2)
    return value if value in LANGUAGES else "en"


_language = _language_from_environment()


def set_language(lang: str) -> None:
    """Speak ``lang`` ("en" or "zh") from now on: to exercise feedback given afterwards,
    to widgets built afterwards, and to the programs started afterwards (the commands a
    notebook runs inherit ``BERTCOURSE_LANG``, :data:`LANGUAGE_VARIABLE`). "zh" also gives
    matplotlib the Chinese font (:func:`register_chinese_font`); going back to "en" leaves it
    there, harmless: it only draws characters that the plot's own font lacks."""
    global _language
    if not isinstance(lang, str):
        raise TypeError(f"set_language: lang must be one of {list(LANGUAGES)} (a str), got "
                        f"{type(lang).__name__} {lang!r:.40}")
    if lang not in LANGUAGES:
        raise ValueError(f"set_language: lang must be one of {list(LANGUAGES)}, got {lang!r}")
    if lang == "zh":
        register_chinese_font()
    _language = lang
    os.environ[LANGUAGE_VARIABLE] = lang
    _pandas_counts_wide_characters(lang == "zh")


def _pandas_counts_wide_characters(on: bool) -> None:
    """pandas' text tables line up Chinese labels only when told that they are two columns wide."""
    try:
        import pandas   # lazy: a heavy import (benchmarks/import_costs.py), and only the Chinese side needs it
    except ImportError:
        return
    pandas.set_option("display.unicode.east_asian_width", on)


def get_language() -> str:
    """The current language: "en" (the default) or "zh"."""
    return _language


_font_files = contextlib.ExitStack()      # keeps the font's file while the kernel runs (a zipped install)


def register_chinese_font() -> None:
    """Let matplotlib draw Chinese: add the shipped font to its font manager, and its family
    last to ``rcParams["font.family"]`` (a fallback: matplotlib >= 3.6 looks for a missing
    character in the later families of that list). Calling it again adds nothing twice; call it
    again after something resets matplotlib's settings (``plt.rcdefaults()``, a style).

    Figures made before are unchanged: a text's font is chosen when the text is created."""
    import matplotlib.font_manager   # lazy: matplotlib is heavy (benchmarks/import_costs.py), only plots need it
    manager = matplotlib.font_manager.fontManager
    if not any(entry.name == FONT_FAMILY for entry in manager.ttflist):
        resource = importlib.resources.files("bertcourse").joinpath("fonts").joinpath(FONT_FILE)
        path = str(_font_files.enter_context(importlib.resources.as_file(resource)))
        manager.addfont(path)
        # The subset has one weight. A bold title would otherwise log "Failed to find font weight
        # bold" into the notebook: list the same file as the bold face too (regular glyphs, no warning).
        regular = next(entry for entry in manager.ttflist if entry.name == FONT_FAMILY)
        manager.ttflist.append(dataclasses.replace(regular, weight=700))
    families = list(matplotlib.rcParams["font.family"])
    if FONT_FAMILY not in families:
        matplotlib.rcParams["font.family"] = [*families, FONT_FAMILY]


def _read_catalog() -> polib.POFile:
    """The package's Chinese catalog, as installed (package data)."""
    resource = importlib.resources.files("bertcourse")      # one joinpath step at a time (Python 3.9)
    for part in ("locale", "zh", "LC_MESSAGES", f"{DOMAIN}.po"):
        resource = resource.joinpath(part)
    return polib.pofile(resource.read_text(encoding="utf-8"))


@functools.lru_cache(maxsize=None)
def _translations(lang: str) -> dict:
    """msgid -> msgstr of the usable (translated, not fuzzy, not obsolete) entries."""
    return {e.msgid: e.msgstr for e in _read_catalog().translated_entries()}


def display_width(text: str) -> int:
    """The columns ``text`` takes in a monospaced font: two for a wide character (Chinese
    letters and full-width punctuation, Unicode's East Asian Width W or F), one for the rest."""
    if not isinstance(text, str):
        raise TypeError(f"display_width: text must be a str, got {type(text).__name__} {text!r:.40}")
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


_STRING_SPEC = re.compile(r"(?:(?P<fill>.)?(?P<align>[<>^]))?(?P<width>\d+)?(?:\.(?P<precision>\d+))?s?", re.S)


class Text(str):
    """A translated text that pads by display width: ``f"{Text('词元'):6s}"`` is ``'词元  '``
    (two wide characters take four columns), where a plain ``str`` would give four spaces'
    worth of padding. Everything else is ``str``'s; what its methods return is a plain ``str``."""

    def __format__(self, spec: str) -> str:
        m = _STRING_SPEC.fullmatch(spec)
        if not m or not m["width"]:
            return str.__format__(self, spec)
        text = str(self) if m["precision"] is None else str(self)[:int(m["precision"])]
        pad = max(0, int(m["width"]) - display_width(text))
        fill, align = m["fill"] or " ", m["align"] or "<"
        left = {"<": 0, ">": pad, "^": pad // 2}[align]
        return fill * left + text + fill * (pad - left)


def _translated(function: str, msgid: str) -> str:
    if not isinstance(msgid, str):
        raise TypeError(f"{function}: msgid must be a str, got {type(msgid).__name__} {msgid!r:.40}")
    if _language == "en":
        return msgid
    return Text(_translations(_language).get(msgid, msgid))


def gettext(msgid: str) -> str:
    """``msgid`` in the current language: the Chinese msgstr when the language is "zh" and
    the catalog has a finished (not fuzzy) translation, else ``msgid`` itself."""
    return _translated("gettext", msgid)


def tr(msgid: str) -> str:
    """:func:`gettext` under the name the notebooks use for the words their own code prints or
    draws (a header, a table's columns, a plot's axes): ``tr("test accuracy")``. Not ``_``: in a
    notebook, ``_`` is IPython's last result. The code stays the same in both editions and the
    Chinese one prints Chinese; ``tools/i18n.py update package`` puts the literal argument of every
    ``tr(...)`` in the English notebooks into this package's catalog, beside the package's own
    strings. Placeholders as for ``_``: ``tr("{n} steps").format(n=n)``."""
    return _translated("tr", msgid)


def tr_table(table, *labels: str):
    """``table`` (a pandas DataFrame or Series) as the learner reads it: each of the English
    ``labels`` (a column, an index entry or an axis's name; literals, like :func:`tr`'s) shown in
    the current language. The code goes on reading the English names of ``table`` itself; this
    is the copy to show: ``tr_table(scores.round(2), "accuracy", "pairs")``. A label that the
    table does not hold is an error (a typo would otherwise stay English without a word)."""
    import pandas as pd         # lazy: this module imports nothing heavy (a caller with a table has it)
    if not isinstance(table, (pd.DataFrame, pd.Series)):
        raise TypeError(f"tr_table: table must be a pandas DataFrame or Series, got {type(table).__name__}")
    axes = [table.index, table.columns] if isinstance(table, pd.DataFrame) else [table.index]
    held = {name for axis in axes for name in axis.names if name is not None}
    held |= {value for axis in axes for level in _levels(axis) for value in level}
    for label in labels:
        if not isinstance(label, str):
            raise TypeError(f"tr_table: each label must be a str, got {type(label).__name__} {label!r:.40}")
        if label not in held:
            raise ValueError(f"tr_table: the label {label!r} is not a column, an index entry or an axis name "
                             f"of the table (it holds {sorted(map(str, held))[:12]})")
    shown = {label: tr(label) for label in labels}
    if isinstance(table, pd.Series):
        return table.rename(index=shown).rename_axis(index=shown)
    return table.rename(index=shown, columns=shown).rename_axis(index=shown, columns=shown)


def _levels(index) -> list:
    """The values of each level of a pandas index (one level unless it is a MultiIndex)."""
    return [index.get_level_values(i).unique() for i in range(index.nlevels)]


def gettext_noop(msgid: str) -> str:
    """Mark ``msgid`` for the catalog without translating it (it is translated where shown)."""
    return msgid


_ = gettext
