"""Re-execute every course notebook in place, top to bottom, in a fresh kernel.

    python tools/run_notebooks.py                 # all notebooks, English then Chinese
    python tools/run_notebooks.py 01 03           # only those whose name starts so
    python tools/run_notebooks.py --lang zh 01    # only the Chinese edition's (notebooks/zh/)

Run it whenever the package changes: nbval (in `pytest`) compares the committed outputs
with a fresh run, so the committed outputs must be exactly what a fresh kernel prints.
It also makes sure each English notebook's first code cell is the Colab install cell below,
and prints each notebook's wall time and peak memory (of the kernel process). The Chinese
notebooks are generated from the English ones (`python tools/i18n.py build`, which copies that
cell and adds the line switching the language), so they are executed as they are.
"""
from __future__ import annotations

import argparse
import pathlib
import resource
import sys
import time

import nbformat
from nbclient import NotebookClient

ROOT = pathlib.Path(__file__).resolve().parents[1]

# The one place that names the GitHub repository. ORG/REPO is a placeholder: replace it
# here and in README.md's badge links when the course is published, then re-run.
REPO = "ORG/REPO"

COLAB_CELL = f'''# On Colab only: install the course package (keeps Colab's own torch and ipywidgets).
import sys
if "google.colab" in sys.modules:
    import subprocess
    subprocess.run([sys.executable, "-m", "pip", "install", "-q",
                    "bertcourse[pretrained] @ git+https://github.com/{REPO}"], check=True)'''


def ensure_colab_cell(nb) -> None:
    first = next((c for c in nb.cells if c.cell_type == "code"), None)
    if first is not None and first.source.startswith("# On Colab only"):
        first.source = COLAB_CELL
    else:
        nb.cells.insert(0 if nb.cells[0].cell_type == "code" else 1, nbformat.v4.new_code_cell(COLAB_CELL))


def run(path: pathlib.Path, english: bool = True) -> tuple[float, float]:
    nb = nbformat.read(path, as_version=4)
    if english:
        ensure_colab_cell(nb)
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
    args = parser.parse_args(argv)
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
