"""Does a refactor change what a chapter computes? Every number every code cell prints, to 12
significant digits, and a digest of every trained model's weights, for a comparison to the bit
between two versions of the package (issue 42: "chapter 7's trained weights and chapter 9's table
are equal to the bit before and after").

    python benchmarks/bit_identity.py 07 09 --json after.json            # this working tree
    git worktree add /tmp/before <commit>
    PYTHONPATH=/tmp/before python benchmarks/bit_identity.py 07 09 --notebooks /tmp/before/notebooks \\
        --json before.json                                                 # the old package and notebooks
    python benchmarks/bit_identity.py --compare before.json after.json     # exit status 1 on a difference

It runs a copy of each English notebook with every print precision widened (the sweep's
:func:`kernel_sweep.widen`), ignored cells included (they print the trained numbers), and appends
one cell that prints a SHA-256 digest of the weights of every ``torch.nn.Module`` the notebook
left in a global variable. Same machine, same threads, same kernels: on one CPU the course is
deterministic, so any difference is the refactor's. Times and memory followed by their unit are
not compared; a table column of times (chapter 9's "training time (s)") still shows as a difference:
read the cells it lists. A cell that shows a function's source differs when that function changed.
"""
from __future__ import annotations

import argparse
import json
import re
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import kernel_sweep  # noqa: E402

DIGEST_CELL = """
import hashlib as _hashlib, torch as _torch
for _name, _value in sorted(globals().items()):
    if isinstance(_value, _torch.nn.Module) and not _name.startswith("_"):
        _h = _hashlib.sha256()
        for _k, _t in _value.state_dict().items():
            _h.update(_k.encode()); _h.update(_t.detach().cpu().contiguous().view(-1).view(_torch.uint8).numpy().tobytes())
        print("weights", _name, type(_value).__name__, _h.hexdigest()[:16])
"""


def outputs(path: pathlib.Path) -> dict:
    """``{cell index: printed text}`` of the widened run of ``path``, plus the weight digests."""
    import nbformat
    nb = nbformat.read(path, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(DIGEST_CELL))
    copy = path.with_name(f".bit_identity_{path.name}")
    nbformat.write(nb, copy)
    try:
        run = kernel_sweep.execute_widened(copy, "native")
    finally:
        copy.unlink()
    found = {}
    for i, cell in enumerate(run.cells):
        if cell.cell_type != "code":
            continue
        text = []
        for out in cell.get("outputs", []):
            if out.output_type == "stream" and out.name == "stdout":
                text.append(out.text)
            elif out.output_type in ("execute_result", "display_data") and "text/plain" in out.get("data", {}):
                if "image/png" not in out.data:
                    text.append(out.data["text/plain"])
            elif out.output_type == "error":
                text.append(f"{out.ename}: {out.evalue}")
        found[str(i)] = "".join(text)
    return found


# times and memory differ from run to run: a number followed by one of these units is not compared
_VARIES = re.compile(r"[-+]?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?\s*(?:s\b|ms\b|seconds|sec\b|it/s|s/it|pairs/s|sentences/s|"
                     r"[kMG]i?B\b|%\s*of\s*peak)")


def normalised(text: str) -> str:
    return _VARIES.sub("<varies>", re.sub(r"\[\d\d:\d\d<[^\]]*\]", "[<time>]", text))


def compare(before: dict, after: dict) -> int:
    differ = 0
    for chapter in sorted(set(before) | set(after)):
        b, a = before.get(chapter, {}), after.get(chapter, {})
        # cells are lined up by their printed text's order: a refactor may rename a call, not add cells
        bl, al = list(b.values()), list(a.values())
        if len(bl) != len(al):
            print(f"{chapter}: {len(bl)} code cells before, {len(al)} after")
            differ += 1
        for i, (x, y) in enumerate(zip(bl, al)):
            if normalised(x) != normalised(y):
                differ += 1
                print(f"--- {chapter}, code cell {i}\nbefore: {x[:600]!r}\nafter:  {y[:600]!r}")
        weights = [line for line in al[-1].splitlines() if line.startswith("weights")] if al else []
        same = "the same" if bl and al and bl[-1] == al[-1] else "DIFFERENT"
        print(f"{chapter}: {len(weights)} models' weights {same}: " + ", ".join(w.split()[1] for w in weights))
    print("no difference" if not differ else f"{differ} differences")
    return 1 if differ else 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("chapters", nargs="*", help="chapter numbers, e.g. 07 09")
    p.add_argument("--notebooks", default=str(ROOT / "notebooks"), help="folder of the English notebooks")
    p.add_argument("--json", help="write the outputs here")
    p.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"), help="compare two --json files")
    args = p.parse_args(argv)
    if args.compare:
        before, after = (json.loads(pathlib.Path(f).read_text()) for f in args.compare)
        return compare(before, after)
    import bertcourse
    print(f"bertcourse from {pathlib.Path(bertcourse.__file__).parent}", flush=True)
    found = {}
    for chapter in args.chapters:
        (path,) = sorted(pathlib.Path(args.notebooks).glob(f"{chapter}_*.ipynb"))
        found[path.stem] = outputs(path)
        print(f"{path.stem}: {len(found[path.stem])} code cells", flush=True)
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(found, indent=1, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
