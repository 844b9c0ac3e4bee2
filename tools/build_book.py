"""Build the course's book: a static, offline, bilingual web site of the executed notebooks.

    python tools/build_book.py --out DIR                 # DIR/en/ and, with notebooks/zh/, DIR/zh/
    python -m http.server -d DIR                         # preview at http://localhost:8000/

The English edition comes from notebooks/NN_*.ipynb, the Chinese one from notebooks/zh/NN_*.ipynb
when that folder has notebooks (``--notebooks`` names another folder laid out the same way).
Sphinx with myst-nb (execution off: the committed outputs are shown, nothing is re-run) and
sphinx-book-theme do the work; the configuration is docs/book/ (conf.py, the front-page
texts front.LANG.md, a small extension in _ext/). This script only stages each edition's
sources in a temporary folder and runs Sphinx on them, one process per edition:

* the Colab install cell (the first code cell) is tagged ``remove-cell``: the book hides it;
* each widget output is replaced by a note saying where to play with the widget (the
  notebooks show the same plot as a static figure next to it), and the notebook's saved
  widget state is dropped, so no page needs the ipywidgets embed manager from a CDN;
* the ``# NBVAL_IGNORE_OUTPUT`` marker line (a note for the tests) is left out of the code shown;
* a picture attached to a markdown cell becomes a file beside the page;
* the front page gets the chapter table (titles from the notebooks, "you build" from the
  README's table, a picture per chapter: the README's widget screenshot or the chapter's
  first figure).

The download button of each chapter gives the committed notebook itself, unchanged. Nothing
here imports torch (the publishing job does not install it; tests/test_book.py checks it).
"""
from __future__ import annotations

import argparse
import base64
import concurrent.futures
import json
import os
import pathlib
import re
import shutil
import sys
import tempfile
import time

import nbformat

ROOT = pathlib.Path(__file__).resolve().parents[1]
CONF_DIR = ROOT / "docs" / "book"
LANGS = ("en", "zh")
README = {"en": ROOT / "README.md", "zh": ROOT / "README.zh-CN.md"}
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
COLAB_MARK = "# On Colab only"          # first line of tools/run_notebooks.py's COLAB_CELL
NBVAL_MARK = "# NBVAL_IGNORE_OUTPUT"

WIDGET_NOTE = {
    "en": "Interactive widget: run this notebook in JupyterLab, Colab or Binder to play with it.",
    "zh": "交互式控件：在 JupyterLab、Colab 或 Binder 中运行本笔记本即可操作它。",
}
PROGRESS_NOTE = {
    "en": "A progress bar (a widget) showed the training here while the cell ran.",
    "zh": "这里在运行时用进度条（一个交互式控件）显示训练进度。",
}
TABLE_HEAD = {"en": ("#", "Chapter", "You build", "Picture"),
              "zh": ("#", "章节", "你将实现", "插图")}
# A progress bar's text form, e.g. "training:   0%|          | 0/200 [00:00<?, ?step/s]".
PROGRESS = re.compile(r"^[^\n|]*\d+%\|")


# --------------------------------------------------------------------------- notebooks

def chapter_notebooks(folder: pathlib.Path) -> list[pathlib.Path]:
    return sorted(folder.glob("[0-9][0-9]_*.ipynb"))


def widget_note(output: dict, lang: str) -> dict:
    """The display output that stands in for one widget output in the book."""
    plain = output.get("data", {}).get("text/plain", "")
    text = PROGRESS_NOTE[lang] if PROGRESS.match(plain) else WIDGET_NOTE[lang]
    return nbformat.v4.new_output("display_data", data={
        "text/html": f'<p class="bc-widget-note">{text}</p>', "text/plain": text})


def stage_notebook(nb, lang: str):
    """The notebook as the book shows it (see the module docstring); ``nb`` is changed in place."""
    nb.metadata.pop("widgets", None)
    code_cells = [c for c in nb.cells if c.cell_type == "code"]
    if code_cells and code_cells[0].source.startswith(COLAB_MARK):
        tags = code_cells[0].metadata.setdefault("tags", [])
        if "remove-cell" not in tags:
            tags.append("remove-cell")
    for cell in code_cells:
        lines = cell.source.split("\n")
        if lines and lines[0].strip() == NBVAL_MARK:
            cell.source = "\n".join(lines[1:])
        cell.outputs = [widget_note(o, lang) if WIDGET_MIME in o.get("data", {}) else o
                        for o in cell.outputs]
    return nb


def title_of(nb) -> str:
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                if line.startswith("# "):
                    return line[2:].strip()
    raise ValueError("a chapter notebook must have a '# title' line in a markdown cell")


def first_figure(nb) -> bytes | None:
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            png = output.get("data", {}).get("image/png")
            if png:
                return base64.b64decode(png if isinstance(png, str) else "".join(png))
    return None


# --------------------------------------------------------------------------- README

def readme_rows(lang: str) -> dict[str, str]:
    """{notebook file name: the "You build" cell of the README's chapter table}."""
    path = README[lang]
    if not path.is_file():
        return {}
    rows = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        match = re.search(r"\((?:notebooks/)?(?:zh/)?(\d\d_[\w]+\.ipynb)\)", cells[1]) if len(cells) >= 3 else None
        if match:
            rows[match.group(1)] = cells[2]
    return rows


def readme_pictures() -> dict[int, pathlib.Path]:
    """{chapter number: the README's widget screenshot of that chapter}."""
    text = README["en"].read_text(encoding="utf-8")
    return {int(n): ROOT / path for n, path in
            re.findall(r"!\[Chapter (\d+)'s[^\]]*\]\((docs/images/[\w.-]+\.png)\)", text)}


def chapter_table(notebooks: list[pathlib.Path], src: pathlib.Path, lang: str) -> str:
    """The front page's chapter table (a MyST list-table) and the pictures it shows."""
    built, pictures = readme_rows(lang), readme_pictures()
    (src / "_pictures").mkdir()
    head = TABLE_HEAD[lang]
    lines = ["```{list-table}", ":header-rows: 1", ":class: bc-chapters", ""]
    lines += [f"* - {head[0]}"] + [f"  - {h}" for h in head[1:]]
    for path in notebooks:
        nb = nbformat.read(path, as_version=4)
        number = int(path.name[:2])
        picture = src / "_pictures" / f"{path.stem}.png"
        if number in pictures:
            shutil.copy2(pictures[number], picture)
        else:
            png = first_figure(nb)
            if png is not None:
                picture.write_bytes(png)
        # "Chapter 3 — The Transformer" -> "The Transformer": the table numbers the rows.
        title = re.sub(r"^[^—]*—\s*", "", title_of(nb))
        image = f"![{title}](_pictures/{picture.name})" if picture.exists() else ""
        lines += [f"* - {number}", f"  - [{title}]({path.name})",
                  f"  - {built.get(path.name, '')}", f"  - {image}"]
    return "\n".join(lines + ["```"])


# --------------------------------------------------------------------------- editions

def stage_attachments(nb, stem: str, src: pathlib.Path) -> None:
    """Pictures attached to markdown cells (``![…](attachment:NAME)``, the chapters' static
    pictures of their widgets) become files beside the pages: Sphinx reads files, not
    attachments. ``nb`` is changed in place."""
    for cell in nb.cells:
        attachments = cell.pop("attachments", None) if cell.cell_type == "markdown" else None
        for name, data in (attachments or {}).items():
            png = data.get("image/png")
            if png is None:
                raise ValueError(f"{stem}: cell {cell.id} attaches {name!r} without a PNG")
            target = src / "_attachments" / f"{stem}-{cell.id}-{name}"
            target.parent.mkdir(exist_ok=True)
            target.write_bytes(base64.b64decode(png if isinstance(png, str) else "".join(png)))
            cell.source = cell.source.replace(f"(attachment:{name})", f"(_attachments/{target.name})")


def stage(lang: str, notebooks: list[pathlib.Path], src: pathlib.Path) -> None:
    src.mkdir(parents=True)
    for path in notebooks:
        nb = stage_notebook(nbformat.read(path, as_version=4), lang)
        stage_attachments(nb, path.stem, src)
        nbformat.write(nb, src / path.name)
    front = (CONF_DIR / f"front.{lang}.md").read_text(encoding="utf-8")
    front = front.replace("@@CHAPTERS@@", chapter_table(notebooks, src, lang))
    front = front.replace("@@TOCTREE@@", "\n".join(p.stem for p in notebooks))
    (src / "index.md").write_text(front, encoding="utf-8")


def run_sphinx(src: str, work: str, settings: str) -> tuple[int, str]:
    """One edition: Sphinx in this (worker) process; returns (exit status, log)."""
    import io
    import contextlib
    from sphinx.cmd.build import build_main

    os.environ["BERTCOURSE_BOOK_SETTINGS"] = settings
    log = io.StringIO()
    with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
        status = build_main(["-b", "html", "-q", "-E", "-c", str(CONF_DIR),
                             "-d", str(pathlib.Path(work) / "doctrees"),
                             src, str(pathlib.Path(work) / "html")])
    return status, log.getvalue()


def build(out: pathlib.Path, notebooks_dir: pathlib.Path) -> list[str]:
    """Build every edition that has notebooks into out/LANG/; returns the languages built."""
    sources = {"en": chapter_notebooks(notebooks_dir), "zh": chapter_notebooks(notebooks_dir / "zh")}
    if not sources["en"]:
        raise FileNotFoundError(f"notebooks: expected {notebooks_dir}/NN_*.ipynb, found none")
    langs = [lang for lang in LANGS if sources[lang]]
    with tempfile.TemporaryDirectory(prefix="book-") as tmp:
        tmp = pathlib.Path(tmp)
        jobs = {}
        for lang in langs:
            other = next((x for x in langs if x != lang), None)
            settings = {
                "lang": lang,
                "path_to_docs": "notebooks" if lang == "en" else "notebooks/zh",
                "other_lang": other,
                "other_pages": ["index", "search", "genindex"]
                               + ([p.stem for p in sources[other]] if other else []),
            }
            stage(lang, sources[lang], tmp / lang / "src")
            (tmp / lang / "settings.json").write_text(json.dumps(settings), encoding="utf-8")
            jobs[lang] = (str(tmp / lang / "src"), str(tmp / lang), str(tmp / lang / "settings.json"))
        # One process per edition: both cores work, and each Sphinx has a fresh interpreter.
        with concurrent.futures.ProcessPoolExecutor(max_workers=len(langs)) as pool:
            futures = {lang: pool.submit(run_sphinx, *job) for lang, job in jobs.items()}
            results = {lang: f.result() for lang, f in futures.items()}
        for lang, (status, log) in results.items():
            if status != 0:
                raise RuntimeError(f"Sphinx failed on the {lang} edition:\n{log}")
            # Sphinx's warnings, without jieba's progress chatter about its dictionary.
            for line in log.splitlines():
                if "WARNING" in line or "ERROR" in line:
                    print(f"[{lang}] {line}", file=sys.stderr)
        out.mkdir(parents=True, exist_ok=True)
        for lang in langs:
            html = tmp / lang / "html"
            # The download button serves the committed notebook, not the staged copy.
            for path in sources[lang]:
                shutil.copy2(path, html / "_sources" / path.name)
            shutil.rmtree(out / lang, ignore_errors=True)
            shutil.copytree(html, out / lang)
    write_root(out, langs)
    return langs


def write_root(out: pathlib.Path, langs: list[str]) -> None:
    """DIR/index.html: a tiny page that sends the reader on to the English edition; and
    DIR/.nojekyll, so that GitHub Pages serves the _static/ and _images/ folders as they are."""
    (out / ".nojekyll").write_text("")
    links = " · ".join(f'<a href="{lang}/index.html">{"中文" if lang == "zh" else "English"}</a>'
                       for lang in langs)
    (out / "index.html").write_text(
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">\n'
        '<meta http-equiv="refresh" content="0; url=en/index.html">\n'
        '<link rel="icon" href="en/_static/favicon.svg">\n'
        "<title>BERT from scratch</title></head>\n"
        f"<body><p>BERT from scratch: {links}</p></body></html>\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, type=pathlib.Path,
                        help="folder to write the site to (DIR/en/, DIR/zh/, DIR/index.html)")
    parser.add_argument("--notebooks", type=pathlib.Path, default=ROOT / "notebooks",
                        help="folder of the English notebooks, with the Chinese ones in zh/ "
                             "(default: notebooks/)")
    args = parser.parse_args(argv)
    if not args.notebooks.is_dir():
        parser.error(f"--notebooks: expected a folder of notebooks, got {args.notebooks}")
    start = time.perf_counter()
    langs = build(args.out.resolve(), args.notebooks.resolve())
    print(f"built {', '.join(langs)} into {args.out} in {time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
