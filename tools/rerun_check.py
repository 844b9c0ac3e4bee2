"""Does re-running a cell print the same thing? Runs each notebook top to bottom and runs
every cell that draws random numbers (or builds a randomly initialised model) a second
time, at once; a cell whose text output differs the second time is listed.

    python tools/rerun_check.py              # every chapter
    python tools/rerun_check.py 01 05        # some

A learner re-runs cells out of order all the time; a cell that prints random draws must
seed its own (``torch.manual_seed`` in its first line, or its own ``torch.Generator``) so
that its output is the one in the book. Cells marked ``# NBVAL_IGNORE_OUTPUT`` (training,
timings) and cells that ``del`` something are not re-run. A check for authors (it runs the
notebooks twice over in places), not part of `pytest`.
"""
from __future__ import annotations

import pathlib
import re
import sys

import nbformat
from nbclient import NotebookClient

ROOT = pathlib.Path(__file__).resolve().parents[1]
RANDOM = re.compile(r"torch\.(randn|rand|randint|randperm|normal|multinomial|bernoulli)\(|np\.random\.|random\."
                    r"|nn\.(Linear|Embedding|MultiheadAttention|Transformer)|BERTModel\(|BERTEncoder\(|make_model\("
                    r"|Classifier\(|build_classifier|dropout|sample|draw|click\(")


def printed_text(outputs) -> str:
    """What a code cell's ``outputs`` show as text, as nbval compares them: streams, plain-text
    results (``<image>`` for a picture) and errors."""
    parts = []
    for o in outputs:
        if o.get("output_type") == "stream":
            parts.append(o["text"])
        elif o.get("output_type") in ("execute_result", "display_data"):
            data = o.get("data", {})
            parts.append("<image>" if "image/png" in data else data.get("text/plain", ""))
        elif o.get("output_type") == "error":
            parts.append(f"ERROR {o.get('ename', '')}")
    return "".join(parts)


def check(path: pathlib.Path) -> list[str]:
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}})
    problems = []
    with client.setup_kernel():
        for i, cell in enumerate(nb.cells):
            if cell.cell_type != "code":
                continue
            client.execute_cell(cell, i)
            if (cell.source.startswith("# NBVAL_IGNORE_OUTPUT") or "del " in cell.source
                    or not RANDOM.search(cell.source) or not printed_text(cell.outputs).strip()):
                continue
            again = nbformat.from_dict(dict(cell))
            again.outputs = []
            try:
                client.execute_cell(again, i)
            except Exception as error:           # report every cell, not just the first
                problems.append(f"{path.name} cell {i}: the second run raised {type(error).__name__}")
                continue
            if printed_text(again.outputs) != printed_text(cell.outputs):
                problems.append(f"{path.name} cell {i}: prints something else when run again: "
                                f"{cell.source.splitlines()[0][:70]!r}")
    return problems


def main(prefixes: list[str]) -> int:
    paths = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    paths = [p for p in paths if not prefixes or p.name[:2] in prefixes]
    problems = []
    for path in paths:
        found = check(path)
        print(f"{path.name}: {'ok' if not found else f'{len(found)} cell(s)'}", flush=True)
        problems += found
    print("\n".join(problems))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
