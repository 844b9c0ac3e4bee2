"""Wall time and peak memory of every chapter notebook, each in a fresh kernel.

    python benchmarks/notebooks.py            # all chapters
    python benchmarks/notebooks.py 03 07      # some
    python benchmarks/notebooks.py --cells 09 # also each code cell's own peak (Linux)

Each notebook is executed (a copy, in a temporary folder; the committed file is left
alone) by a separate Python process. That process's only child is the kernel, so its
RUSAGE_CHILDREN peak RSS after the kernel has exited is the kernel's peak memory.
Budgets are the course's limits; the script prints a table and exits non-zero if a
notebook is over budget. A script, not a test: timings depend on the machine's load.

``--cells`` finds the cell that sets the peak: after every code cell the kernel also runs
a probe that prints its peak resident memory since the previous probe (``VmHWM``, reset
through ``/proc/self/clear_refs``) and what it holds afterwards (``VmRSS``).
"""
from __future__ import annotations

import json
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
# (seconds, MB) limits from the issues; chapter 1 is the foundation's 30 s / 1 GB.
BUDGETS = {"01": (30, 1024), "02": (60, 1024), "03": (60, 1024), "04": (45, 1024), "05": (45, 1024),
           "06": (45, 1024), "07": (120, 1229), "08": (60, 1229), "09": (150, 1024), "10": (90, 1024)}

CHILD = r"""
import json, pathlib, resource, shutil, sys, tempfile, time
import nbformat
from nbclient import NotebookClient
src, per_cell = pathlib.Path(sys.argv[1]), sys.argv[2] == "cells"
PROBE = ("import re as _re\n_s = open('/proc/self/status').read()\n"
         "print(*(int(_re.search(k + r':\\s+(\\d+)', _s).group(1)) // 1024 for k in ('VmHWM', 'VmRSS')))\n"
         "open('/proc/self/clear_refs', 'w').write('5')")
with tempfile.TemporaryDirectory() as tmp:
    nb = nbformat.read(src, as_version=4)
    if per_cell:
        cells, probes = [], []
        for i, cell in enumerate(nb.cells):
            cells.append(cell)
            if cell.cell_type == "code":
                probes.append((i, nbformat.v4.new_code_cell(PROBE)))
                cells.append(probes[-1][1])
        nb.cells = cells
    start = time.perf_counter()
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": tmp}}).execute()
    seconds = time.perf_counter() - start
cells = [[i, *map(int, "".join(o.get("text", "") for o in p.outputs).split())] for i, p in probes] if per_cell else []
# the probes' reset also resets what RUSAGE_CHILDREN reports: then the peak is the cells' largest
peak = max([resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024] + [c[1] for c in cells])
print(json.dumps({"seconds": seconds, "cells": cells, "peak_mb": peak}))
"""


def measure(path: pathlib.Path, per_cell: bool = False) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, str(path), "cells" if per_cell else "whole"],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(args: list[str]) -> int:
    per_cell = "--cells" in args
    prefixes = [a for a in args if a != "--cells"]
    paths = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    paths = [p for p in paths if not prefixes or p.name[:2] in prefixes]
    over = 0
    print(f"{'notebook':34} {'seconds':>8} {'budget':>7} {'peak MB':>8} {'budget':>7}")
    for p in paths:
        r = measure(p, per_cell)
        s_budget, m_budget = BUDGETS.get(p.name[:2], (90, 1229))
        flag = "" if r["seconds"] <= s_budget and r["peak_mb"] <= m_budget else "  OVER BUDGET"
        over += bool(flag)
        print(f"{p.name:34} {r['seconds']:8.1f} {s_budget:7d} {r['peak_mb']:8.0f} {m_budget:7d}{flag}",
              flush=True)
        for i, peak, after in sorted(r["cells"], key=lambda c: -c[1])[:5]:
            print(f"    cell {i:3d} (0-based): peak {peak:5d} MB, holds {after:5d} MB after it", flush=True)
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
