"""The language the package speaks to the learner: English (the default) or Chinese.

One switch, read when the text is produced (exercise feedback when ``check()`` runs,
widget labels when a widget is built)::

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
step. :func:`extract_messages` finds every marked string with :mod:`ast`;
:func:`catalog_problems` lists what the catalog lacks (``tools/i18n.py check`` and the
tests call it); ``python -m bertcourse.i18n update`` adds new strings (untranslated) and
marks entries no longer in the code obsolete. This module imports no torch, and nothing
from the rest of the package, so every layer may import it.
"""
from __future__ import annotations

import ast
import functools
import importlib.resources
import pathlib
import sys

__all__ = ["LANGUAGES", "catalog_path", "catalog_problems", "extract_messages", "get_language",
           "gettext", "gettext_noop", "set_language", "update_catalog"]

LANGUAGES = ("en", "zh")
"""The languages :func:`set_language` accepts: the source language first."""
DOMAIN = "bertcourse"
PACKAGE = pathlib.Path(__file__).resolve().parent
# the call names whose first argument is a message (the names modules import the functions as)
MARKERS = ("_", "N_")
# module-level lists whose functions' docstrings are diagnosis messages (see exercises/core.py)
DIAGNOSES_SUFFIX = "_DIAGNOSES"

_language = "en"


def set_language(lang: str) -> None:
    """Speak ``lang`` ("en" or "zh") from now on: to exercise feedback given afterwards
    and to widgets built afterwards."""
    global _language
    if not isinstance(lang, str):
        raise TypeError(f"set_language: lang must be one of {list(LANGUAGES)} (a str), got "
                        f"{type(lang).__name__} {lang!r:.40}")
    if lang not in LANGUAGES:
        raise ValueError(f"set_language: lang must be one of {list(LANGUAGES)}, got {lang!r}")
    _language = lang


def get_language() -> str:
    """The current language: "en" (the default) or "zh"."""
    return _language


def catalog_path(lang: str = "zh") -> pathlib.Path:
    """The source tree's catalog for ``lang`` (what :func:`update_catalog` rewrites)."""
    if lang not in LANGUAGES[1:]:
        raise ValueError(f"catalog_path: lang must be one of {list(LANGUAGES[1:])}, got {lang!r}")
    return PACKAGE / "locale" / lang / "LC_MESSAGES" / f"{DOMAIN}.po"


def _read_catalog(path=None):
    import polib      # here, not at the top: English needs no catalog (and no polib)
    if path is None:
        resource = importlib.resources.files("bertcourse")      # one joinpath step at a time (Python 3.9)
        for part in ("locale", "zh", "LC_MESSAGES", f"{DOMAIN}.po"):
            resource = resource.joinpath(part)
        return polib.pofile(resource.read_text(encoding="utf-8"))
    path = pathlib.Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"catalog: no .po file at {path}")
    return polib.pofile(str(path))


@functools.lru_cache(maxsize=None)
def _translations(lang: str) -> dict:
    """msgid -> msgstr of the usable (translated, not fuzzy, not obsolete) entries."""
    return {e.msgid: e.msgstr for e in _read_catalog().translated_entries()}


def gettext(msgid: str) -> str:
    """``msgid`` in the current language: the Chinese msgstr when the language is "zh" and
    the catalog has a finished (not fuzzy) translation, else ``msgid`` itself."""
    if not isinstance(msgid, str):
        raise TypeError(f"gettext: msgid must be a str, got {type(msgid).__name__} {msgid!r:.40}")
    if _language == "en":
        return msgid
    return _translations(_language).get(msgid, msgid)


def gettext_noop(msgid: str) -> str:
    """Mark ``msgid`` for the catalog without translating it (it is translated where shown)."""
    return msgid


_ = gettext


# --- The catalog's upkeep ------------------------------------------------------------

def _docstring_message(function: ast.AST) -> str | None:
    doc = ast.get_docstring(function, clean=False)
    return " ".join(doc.split()) if doc else None     # as exercises.core.message_of reads it


def _messages_in(tree: ast.Module) -> list[tuple[str, int]]:
    found = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in MARKERS
                and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            found.append((node.args[0].value, node.lineno))
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id.endswith(DIAGNOSES_SUFFIX)
                                                for t in node.targets):
            for name in ast.walk(node.value):
                if isinstance(name, ast.Name) and name.id in functions:
                    message = _docstring_message(functions[name.id])
                    if message:
                        found.append((message, functions[name.id].lineno))
    return found


def extract_messages(root=None) -> dict[str, list[str]]:
    """Every learner-facing string of the package under ``root`` (default: this package):
    ``{msgid: ["path:line", ...]}``. Marked strings are the first argument of ``_(...)`` /
    ``N_(...)`` calls when it is a literal, and the docstrings of the functions listed in a
    module-level ``*_DIAGNOSES`` list."""
    root = PACKAGE if root is None else pathlib.Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"extract_messages: root must be a folder, got {root}")
    messages: dict[str, list[str]] = {}
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        where = path.relative_to(root.parent).as_posix()
        for msgid, line in _messages_in(tree):
            if msgid:
                messages.setdefault(msgid, []).append(f"{where}:{line}")
    return messages


def catalog_problems(path=None, root=None) -> list[str]:
    """What keeps the Chinese catalog (``path``; default: the package's) from covering the
    package (under ``root``): one line per string that is missing, untranslated or fuzzy,
    and per catalog entry that no code uses any more. An empty list means complete."""
    catalog = _read_catalog(path)
    messages = extract_messages(root)
    entries = {e.msgid: e for e in catalog if not e.obsolete}
    problems = []
    for msgid, places in messages.items():
        entry, short = entries.get(msgid), f"{msgid[:70]!r} ({places[0]})"
        if entry is None:
            problems.append(f"missing from the catalog: {short}")
        elif "fuzzy" in entry.flags:
            problems.append(f"fuzzy (the English changed; check the translation): {short}")
        elif not entry.msgstr:
            problems.append(f"untranslated: {short}")
    for msgid in entries:
        if msgid not in messages:
            problems.append(f"stale (no code uses it; run `python -m bertcourse.i18n update`): {msgid[:70]!r}")
    return problems


def update_catalog(path=None, root=None) -> tuple[int, int]:
    """Bring the catalog at ``path`` (default: the source tree's) in step with the code:
    add new strings untranslated, record where each is used, mark entries that no code
    uses obsolete (kept at the end of the file, so an edited string's old translation is
    still there to copy). Returns ``(added, made_obsolete)``."""
    import polib
    path = catalog_path() if path is None else pathlib.Path(path)
    catalog = _read_catalog(path) if path.is_file() else polib.POFile()
    if not path.is_file():
        catalog.metadata = {"Project-Id-Version": DOMAIN, "Language": "zh_CN", "MIME-Version": "1.0",
                            "Content-Type": "text/plain; charset=UTF-8", "Content-Transfer-Encoding": "8bit"}
    messages = extract_messages(root)
    entries = {e.msgid: e for e in catalog}
    added = obsoleted = 0
    for msgid, places in messages.items():
        entry = entries.get(msgid)
        if entry is None:
            entry = polib.POEntry(msgid=msgid, msgstr="")
            catalog.append(entry)
            added += 1
        entry.obsolete = False
        entry.occurrences = [tuple(p.rsplit(":", 1)) for p in places]
        if "{" in msgid and "python-brace-format" not in entry.flags:
            entry.flags.append("python-brace-format")
    for entry in catalog:
        if entry.msgid not in messages and not entry.obsolete:
            entry.obsolete, entry.occurrences = True, []
            obsoleted += 1
    # in the order of the code (by file, then line), obsolete entries last: what a translator reads
    order = {msgid: (places[0].rsplit(":", 1)[0], int(places[0].rsplit(":", 1)[1]))
             for msgid, places in messages.items()}
    catalog[:] = sorted(catalog, key=lambda e: (e.obsolete, order.get(e.msgid, ("", 0))))
    path.parent.mkdir(parents=True, exist_ok=True)
    catalog.wrapwidth = 100
    catalog.save(str(path))
    _translations.cache_clear()
    return added, obsoleted


def main(argv=None) -> int:
    """``python -m bertcourse.i18n update|check``."""
    argv = sys.argv[1:] if argv is None else argv
    if argv == ["update"]:
        added, obsoleted = update_catalog()
        print(f"{catalog_path()}: {added} new (untranslated), {obsoleted} made obsolete")
        return 0
    if argv == ["check"]:
        problems = catalog_problems()
        print("\n".join(problems) or "the package's catalog is complete")
        return 1 if problems else 0
    print("usage: python -m bertcourse.i18n update|check", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
