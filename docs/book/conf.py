"""Sphinx configuration of the course's book (both editions).

tools/build_book.py runs Sphinx once per edition on a staged copy of the notebooks and
passes what differs between editions (language, where the notebooks live in the
repository, which pages the other edition has) in the JSON file that
$BERTCOURSE_BOOK_SETTINGS names. Everything else is here.
"""
from __future__ import annotations

import json
import os
import pathlib
import sys
import tomllib

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE / "_ext"))

_settings_path = os.environ.get("BERTCOURSE_BOOK_SETTINGS")
if not _settings_path:
    raise RuntimeError("build the book with `python tools/build_book.py --out DIR`, "
                       "which sets BERTCOURSE_BOOK_SETTINGS")
BOOK = json.loads(pathlib.Path(_settings_path).read_text(encoding="utf-8"))

# The one repository setting (pyproject.toml [tool.bertcourse]) for every outward link.
_course = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["bertcourse"]
REPOSITORY, REF = _course["repository"], _course["ref"]
# "ORG/REPO" means unpublished (tools/run_notebooks.py's UNSET): no address to link to, so the
# book shows no repository button and no Colab or Binder launch buttons until it has one.
PUBLISHED = REPOSITORY != "ORG/REPO"

ZH = BOOK["lang"] == "zh"
project = "从零实现 BERT" if ZH else "BERT from scratch"
html_title = project
author = "bertcourse"
copyright = "bertcourse contributors (MIT licence)"
# zh_CN: Sphinx's Chinese search (words segmented with jieba) and Chinese theme labels.
language = "zh_CN" if ZH else "en"

extensions = ["myst_nb", "sphinx_copybutton", "bookext"]
templates_path = [str(HERE / "_templates")]
html_static_path = [str(HERE / "_static")]
html_css_files = ["book.css"]
html_favicon = str(HERE / "_static" / "favicon.svg")
exclude_patterns = ["_build", "**.ipynb_checkpoints"]

# MyST leaves $...$ and $$...$$ as plain text unless these are on.
myst_enable_extensions = ["dollarmath", "amsmath"]
# The notebooks are committed executed: show their outputs, never run them.
nb_execution_mode = "off"
# No ipywidgets embed manager (it would come from a CDN): build_book.py replaces each
# widget with a note, and the notebooks' own static figures stand in for it.
nb_ipywidgets_js = {}
# MathJax from the site itself (build_book.py copies it from the django-static-mathjax
# package into _static/mathjax), never from a CDN.
mathjax_path = "mathjax/tex-mml-chtml.js"

html_theme = "sphinx_book_theme"
html_context = {
    # pydata-sphinx-theme logs a console error on a first visit when no mode is set.
    "default_mode": "light",
}
html_theme_options = {
    "use_download_button": True,
    "article_header_end": ["language-switch.html", "article-header-buttons.html"],
    "show_toc_level": 2,
    "home_page_in_toc": True,
}
if PUBLISHED:
    html_theme_options.update({
        "repository_url": f"https://github.com/{REPOSITORY}",
        "repository_branch": REF,
        "path_to_docs": BOOK["path_to_docs"],
        "use_repository_button": True,
        "launch_buttons": {
            "colab_url": "https://colab.research.google.com",
            "binderhub_url": "https://mybinder.org",
            "notebook_interface": "jupyterlab",
        },
    })
html_show_sourcelink = False
html_last_updated_fmt = None
copybutton_exclude = ".linenos, .gp, .go"
# For _ext/bookext.py: which edition this is, and the other one's pages.
bc_book = BOOK
