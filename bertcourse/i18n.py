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
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import importlib.resources

import polib

__all__ = ["FONT_FAMILY", "LANGUAGES", "get_language", "gettext", "gettext_noop", "register_chinese_font",
           "set_language", "tr"]

LANGUAGES = ("en", "zh")
"""The languages :func:`set_language` accepts: the source language first."""
DOMAIN = "bertcourse"
FONT_FAMILY = "Bertcourse Sans SC"
"""The family name of the Chinese font that ships in ``bertcourse/fonts`` (tools/make_font_subset.py)."""
FONT_FILE = "BertcourseSansSC-Regular.otf"

_language = "en"


def set_language(lang: str) -> None:
    """Speak ``lang`` ("en" or "zh") from now on: to exercise feedback given afterwards
    and to widgets built afterwards. "zh" also gives matplotlib the Chinese font
    (:func:`register_chinese_font`); going back to "en" leaves it there, harmless: it only
    draws characters that the plot's own font lacks."""
    global _language
    if not isinstance(lang, str):
        raise TypeError(f"set_language: lang must be one of {list(LANGUAGES)} (a str), got "
                        f"{type(lang).__name__} {lang!r:.40}")
    if lang not in LANGUAGES:
        raise ValueError(f"set_language: lang must be one of {list(LANGUAGES)}, got {lang!r}")
    if lang == "zh":
        register_chinese_font()
    _language = lang


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


def _translated(function: str, msgid: str) -> str:
    if not isinstance(msgid, str):
        raise TypeError(f"{function}: msgid must be a str, got {type(msgid).__name__} {msgid!r:.40}")
    if _language == "en":
        return msgid
    return _translations(_language).get(msgid, msgid)


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


def gettext_noop(msgid: str) -> str:
    """Mark ``msgid`` for the catalog without translating it (it is translated where shown)."""
    return msgid


_ = gettext
