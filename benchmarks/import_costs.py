"""What importing each third-party package costs a notebook that already has torch loaded:
resident memory and wall time, each in a fresh Python, side by side in one run.

    python benchmarks/import_costs.py

CONTRIBUTING.md ("Layers") allows an import inside a function only for a package that costs
at least 20 MB or 0.5 s here (or is an optional extra); tests/test_package.py's LAZY_OK lists
them. A script, not a test: the numbers depend on the machine and its load.
"""
from __future__ import annotations

import subprocess
import sys

PACKAGES = ["pandas", "matplotlib.figure", "matplotlib.pyplot", "transformers", "IPython", "tqdm.auto",
            "tokenizers", "safetensors.torch", "huggingface_hub", "pygments", "polib", "ipywidgets"]

PROBE = """
import importlib, time, torch, numpy
def rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20
before, start = rss_mb(), time.perf_counter()
importlib.import_module({name!r})
print(f"{{rss_mb() - before:.1f}} {{time.perf_counter() - start:.2f}}")
"""


def main() -> None:
    print(f"{'package':20s} {'+MB':>7s} {'s':>6s}  heavy (>= 20 MB or >= 0.5 s)")
    for name in PACKAGES:
        out = subprocess.run([sys.executable, "-c", PROBE.format(name=name)], capture_output=True, text=True)
        if out.returncode:
            print(f"{name:20s} not installed")
            continue
        mb, s = map(float, out.stdout.split())
        print(f"{name:20s} {mb:7.1f} {s:6.2f}  {'yes' if mb >= 20 or s >= 0.5 else 'no'}")


if __name__ == "__main__":
    main()
