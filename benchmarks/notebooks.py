"""Wall time and peak memory of every chapter notebook, each in a fresh kernel.

    python benchmarks/notebooks.py            # all chapters
    python benchmarks/notebooks.py 03 07      # some
    python benchmarks/notebooks.py --cells 09 # also each code cell's own peak (Linux)

Each notebook is executed (a copy, in a temporary folder; the committed file is left
alone) by a separate Python process, whose only child is the kernel. Memory, in MB:

* ``kernel``: the kernel's own peak resident memory, exact (``RUSAGE_CHILDREN`` after it exited);
* ``tree``: the peak of the kernel *and every process it starts* (the scaling-up chapter's
  ``torchrun`` and its ranks), summed: every 50 ms while the kernel has processes of its own, the
  script adds up the proportional set size (PSS, from ``/proc/PID/smaps_rollup``) of the whole
  process tree (0 when the kernel never started one: then ``kernel`` is the whole peak, and reading
  the kernel's memory map every 50 ms would slow it). PSS counts a page that several
  processes share (the libraries each of them loads) once in all, as a memory limit does;
  summing RSS would count PyTorch once per process. A 50 ms sample can miss a shorter peak,
  so the tree figure is a lower bound of the true sum;
* ``peak``: the larger of the two: what is held to MEMORY_BUDGET_MB (Binder's 1 GB covers the
  Jupyter server too). Moving work into a subprocess cannot hide memory from it.

Budgets are the course's limits; the script prints a table and exits non-zero if a
notebook is over budget. A script, not a test: timings depend on the machine's load.

``--cells`` finds the cell that sets the kernel's peak: after every code cell the kernel also
runs a probe that prints its peak resident memory since the previous probe (``VmHWM``, reset
through ``/proc/self/clear_refs``) and what it holds afterwards (``VmRSS``).
"""
from __future__ import annotations

import json
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
# Wall-time limits (s) from the issues; chapter 1 is the foundation's 30 s.
BUDGETS = {"01": 30, "02": 60, "03": 60, "04": 45, "05": 45, "06": 45, "07": 120, "08": 60, "09": 150, "10": 150, "11": 150,
           "12": 150, "13": 45, "14": 90}
# Binder guarantees 1 GB for the kernel, the Jupyter server and everything else together (issue 23):
# every notebook's peak, its kernel and every process the kernel starts summed, at most this.
MEMORY_BUDGET_MB = 900

CHILD = r"""
import json, os, pathlib, resource, sys, tempfile, threading, time
import nbformat
from nbclient import NotebookClient
src, per_cell = pathlib.Path(sys.argv[1]), sys.argv[2] == "cells"
sys.path.insert(0, sys.argv[3])          # benchmarks/: process_tree
from process_tree import descendants, tree_mb   # the kernel and whatever it starts (torchrun, its ranks, ...)
PROBE = ("import re as _re\n_s = open('/proc/self/status').read()\n"
         "print(*(int(_re.search(k + r':\\s+(\\d+)', _s).group(1)) // 1024 for k in ('VmHWM', 'VmRSS')))\n"
         "open('/proc/self/clear_refs', 'w').write('5')")


peak = {"rss": 0.0, "pss": 0.0, "processes": 0}
done = threading.Event()


def sample():        # every 50 ms: the whole tree's memory, summed, while the kernel has children
    while not done.wait(0.05):
        members = descendants(os.getpid())
        peak["processes"] = max(peak["processes"], len(members))
        # The kernel alone needs no sampling: its peak is exact below (RUSAGE_CHILDREN). Reading its
        # smaps_rollup every 50 ms contends with the kernel's own mmap/munmap (bertcourse.memory.
        # unmap_large_blocks): chapter 10 took 229 s under that sampler, 159 s without (2026-11-29).
        if len(members) > 1:
            rss, pss, _ = tree_mb(os.getpid())
            peak["rss"], peak["pss"] = max(peak["rss"], rss), max(peak["pss"], pss)


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
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    start = time.perf_counter()
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": tmp}}).execute()
    seconds = time.perf_counter() - start
    done.set()
    sampler.join()
cells = [[i, *map(int, "".join(o.get("text", "") for o in p.outputs).split())] for i, p in probes] if per_cell else []
# the kernel alone, exactly: its peak RSS (the probes' reset also resets what RUSAGE_CHILDREN
# reports: then the cells' largest)
kernel = max([resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024] + [c[1] for c in cells])
print(json.dumps({"seconds": seconds, "cells": cells, "kernel_mb": kernel, "tree_rss_mb": peak["rss"],
                  "tree_pss_mb": peak["pss"], "processes": peak["processes"],
                  "peak_mb": max(kernel, peak["pss"])}))
"""


def measure(path: pathlib.Path, per_cell: bool = False) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, str(path), "cells" if per_cell else "whole",
                          str(ROOT / "benchmarks")],
                         capture_output=True, text=True)
    if out.returncode != 0:      # say which cell failed and why (nbclient's error is on stderr)
        raise RuntimeError(f"{path.name} did not run to the end:\n{out.stderr[-4000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(args: list[str]) -> int:
    if any(a in ("-h", "--help") for a in args):
        print(__doc__)
        return 0
    per_cell = "--cells" in args
    prefixes = [a for a in args if a != "--cells"]
    paths = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    chapters = [p.name[:2] for p in paths]
    unknown = [a for a in prefixes if a not in chapters]
    if unknown:
        print(f"unknown argument(s) {', '.join(unknown)}: give chapter numbers ({', '.join(chapters)}) and "
              f"optionally --cells", file=sys.stderr)
        return 2
    paths = [p for p in paths if not prefixes or p.name[:2] in prefixes]
    over = 0
    print(f"{'notebook':34} {'seconds':>8} {'budget':>7} {'kernel MB':>10} {'tree MB':>8} {'procs':>6} "
          f"{'peak MB':>8} {'budget':>7}")
    for p in paths:
        r = measure(p, per_cell)
        s_budget = BUDGETS.get(p.name[:2], 90)
        flag = "" if r["seconds"] <= s_budget and r["peak_mb"] <= MEMORY_BUDGET_MB else "  OVER BUDGET"
        over += bool(flag)
        print(f"{p.name:34} {r['seconds']:8.1f} {s_budget:7d} {r['kernel_mb']:10.0f} {r['tree_pss_mb']:8.0f} "
              f"{r['processes']:6d} {r['peak_mb']:8.0f} {MEMORY_BUDGET_MB:7d}{flag}", flush=True)
        for i, peak, after in sorted(r["cells"], key=lambda c: -c[1])[:5]:
            print(f"    cell {i:3d} (0-based): peak {peak:5d} MB, holds {after:5d} MB after it", flush=True)
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
