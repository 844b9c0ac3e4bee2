"""The course book's small Sphinx extension.

* the language switch: each page links to the same page of the other edition;
* MathJax served from the site: copied at build time from the django-static-mathjax package
  (MathJax 3.2.2 with its Apache-2.0 licence), so no page loads it from a CDN;
* a fix for Sphinx 9.0's Chinese search, which writes ``window.Stemmer = ChineseStemmer``
  into language_data.js although only the English stemmer is shipped for Chinese (Sphinx
  issue #14229, fixed upstream by PR #14416): every Chinese page logged a ReferenceError and
  search found nothing. The Chinese index stems Latin words with the English stemmer, so the
  fix points ``Stemmer`` at ``EnglishStemmer``.
"""
from __future__ import annotations

import importlib.util
import pathlib
import shutil

from sphinx.application import Sphinx
from sphinx.util import logging

logger = logging.getLogger(__name__)

# The parts of MathJax's es5 build that tex-mml-chtml.js loads or may load on demand
# (TeX extensions, CommonHTML fonts, the menu and accessibility tools); the other
# all-in-one bundles are not used.
MATHJAX_PARTS = ["tex-mml-chtml.js", "input", "output", "ui", "a11y", "sre", "adaptors"]
SWITCH = {  # (label, tooltip) of the link to the other edition, in that edition's language
    "zh": ("中文", "阅读本页的中文版"),
    "en": ("English", "Read this page in English"),
}


def mathjax_source() -> pathlib.Path:
    """The folder of the installed django-static-mathjax package that holds MathJax."""
    spec = importlib.util.find_spec("mathjax")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("MathJax is missing: pip install -r requirements-book.txt "
                           "(package django-static-mathjax)")
    folder = pathlib.Path(list(spec.submodule_search_locations)[0]) / "static" / "mathjax"
    if not (folder / "es5" / "tex-mml-chtml.js").is_file():
        raise RuntimeError(f"{folder} does not hold MathJax's es5/tex-mml-chtml.js")
    return folder


def copy_mathjax(outdir: pathlib.Path) -> None:
    source = mathjax_source()
    target = outdir / "_static" / "mathjax"
    target.mkdir(parents=True, exist_ok=True)
    for part in MATHJAX_PARTS:
        src = source / "es5" / part
        if src.is_dir():
            shutil.copytree(src, target / part, dirs_exist_ok=True)
        else:
            shutil.copy2(src, target / part)
    shutil.copy2(source / "LICENSE", target / "LICENSE")


def fix_chinese_stemmer(outdir: pathlib.Path) -> None:
    path = outdir / "_static" / "language_data.js"
    text = path.read_text(encoding="utf-8")
    if "window.Stemmer = ChineseStemmer" in text:
        path.write_text(text.replace("window.Stemmer = ChineseStemmer",
                                     "window.Stemmer = EnglishStemmer"), encoding="utf-8")


def add_language_switch(app: Sphinx, pagename: str, templatename: str, context: dict,
                        doctree) -> None:
    book = app.config.bc_book
    other = book.get("other_lang")
    if not other:
        return
    # Every page lives at the top of its edition (DIR/en/x.html, DIR/zh/x.html).
    up = "../" * (pagename.count("/") + 1)
    target = pagename if pagename in set(book["other_pages"]) else "index"
    label, title = SWITCH[other]
    context.update(bc_switch_href=f"{up}{other}/{target}.html", bc_switch_lang=other,
                   bc_switch_label=label, bc_switch_title=title)


def finish(app: Sphinx, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    outdir = pathlib.Path(app.outdir)
    copy_mathjax(outdir)
    if app.config.language.startswith("zh"):
        fix_chinese_stemmer(outdir)


def setup(app: Sphinx) -> dict:
    app.add_config_value("bc_book", {}, "html", types=frozenset({dict}))
    app.connect("html-page-context", add_language_switch)
    app.connect("build-finished", finish)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
