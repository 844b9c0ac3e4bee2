"""Find the committed outputs that depend on the CPU, before a learner does.

    python tools/kernel_sweep.py                      # every notebook, both editions, every setting
    python tools/kernel_sweep.py 05 07                # only chapters whose name starts so
    python tools/kernel_sweep.py --edition en         # one edition (en, zh or both)
    python tools/kernel_sweep.py --settings default   # some kernel settings only
    python tools/kernel_sweep.py --json sweep.json    # also write the findings as JSON
    python tools/kernel_sweep.py 05 --margins         # every printed number's spread and margin

nbval compares every committed output with a fresh run, so an output must be the same on
every learner's CPU. PyTorch, oneDNN and MKL choose their kernels by the instructions a CPU
has, and a float computed by other kernels can end in other last digits. An x86 machine can
run each notebook under every kernel setting that any x86 CPU gets (:data:`SETTINGS`):

* ``native``: this CPU's best (AVX-512 here, with oneDNN's bfloat16 path where the CPU has it);
* ``avx2``: PyTorch, oneDNN and MKL held to AVX2, as on most laptops and AMD Zen 1-3 machines;
* ``default``: PyTorch's portable kernels, oneDNN held to SSE4.1 and MKL to SSE4.2, which is
  the kind of code path a CPU without AVX2, or another architecture, takes.
* ``native-2-threads``, ``avx2-2-threads``: the first two with two threads for the chapters
  that train (``bertcourse.utils.set_threads``): a learner's laptop uses all its cores, and a sum
  split over threads is added in another order.

This tool runs nbval, strict as ``pytest`` does (``tools/colab_check.py``'s ``run_nbval``), on
each notebook under each setting, proves in the same kernel that the setting took effect, and
lists every compared output line that differs from the committed one, with its cell. A
setting that equals ``native`` on this CPU (``avx2`` on an AVX2-only machine) is skipped.

When to run it: after any change to a notebook's computation or to package code a notebook
calls, before committing the re-executed notebooks (CONTRIBUTING.md, "Outputs that hold on
every CPU"). Two notebooks run at a time (``--jobs``); the whole sweep takes about half an
hour on two cores.

The Chinese edition's code cells are the English ones plus the language switch (``tools/i18n.py
check`` proves it), so its numbers are the English edition's; it is swept too, since its
outputs are compared as well (in CI's Colab-stack run).
"""
from __future__ import annotations

import argparse
import json
import math
import pathlib
import re
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field

from colab_check import CAPABILITY_PROBE, KERNEL_LIMITS, NbvalRun, read_probe, run_nbval, trains
from rerun_check import printed_text
from run_notebooks import COLAB_HEADER

ROOT = pathlib.Path(__file__).resolve().parents[1]
EDITIONS = {"en": ROOT / "notebooks", "zh": ROOT / "notebooks" / "zh"}

# The kernel settings any x86 machine can produce, by name: the environment variables and the
# capability PyTorch must then report (None: whatever this CPU's best is). The kernel settings run
# the notebooks on one thread; the "-2-threads" ones let the chapters that train use two
# (bertcourse.utils.set_threads, capped by BERTCOURSE_THREADS), since a sum split over two threads
# is added in another order too. (Two of them side by side share two cores: slower, same numbers.)
ONE, TWO = {"BERTCOURSE_THREADS": "1"}, {"BERTCOURSE_THREADS": "2"}
KERNEL_SETTINGS = {"native": ({**ONE}, None),
                   "avx2": ({**KERNEL_LIMITS["AVX2"], **ONE}, "AVX2"),
                   "default": ({**KERNEL_LIMITS["DEFAULT"], **ONE}, "DEFAULT")}
SETTINGS = {**KERNEL_SETTINGS,
            "native-2-threads": ({**TWO}, None),
            "avx2-2-threads": ({**KERNEL_LIMITS["AVX2"], **TWO}, "AVX2")}


@dataclass
class Finding:
    """One notebook under one setting: how it ran, and what differed from the committed outputs."""
    notebook: str                   # e.g. "zh/05_masked_language_modeling.ipynb"
    setting: str
    capability: str = ""            # what the kernel reported after the last cell
    threads: int = 0                # the threads PyTorch computed on after the last cell
    seconds: float = 0.0
    cells: int = 0                  # nbval's cells (code cells) that ran
    differences: dict[str, list[str]] = field(default_factory=dict)   # {"Cell 25": [diff lines]}
    problem: str = ""               # the setting did not take effect, or nothing ran


def differing_lines(message: str) -> list[str]:
    """The lines of an nbval failure that say what differs, as ``committed: …`` and ``this run:
    …`` (pytest's diff of ``reference == fresh`` marks the committed line ``+``, the fresh one
    ``-``), or, when a cell raised, the error's own lines."""
    lines = [l.rstrip() for l in message.splitlines()]
    diff = [("committed: " if m.group(1) == "+" else "this run:  ") + l[m.end():]
            for l in lines if (m := re.match(r"\s*([-+]) ", l))]
    if diff:
        return diff
    errors = [l for l in lines if re.match(r"\s*\w*(Error|Exception)\b", l)]
    return errors or [l for l in lines if l.strip()][-6:]


def notebooks(prefixes: list[str], edition: str) -> list[pathlib.Path]:
    """The course notebooks of ``edition`` ("en", "zh" or "both") whose names start with one of
    ``prefixes`` (all when none)."""
    if edition not in ("en", "zh", "both"):
        raise ValueError(f"edition must be 'en', 'zh' or 'both', got {edition!r}")
    folders = [EDITIONS[e] for e in (("en", "zh") if edition == "both" else (edition,))]
    found = [p for folder in folders for p in sorted(folder.glob("[0-9][0-9]_*.ipynb"))
             if not prefixes or any(p.name.startswith(x) for x in prefixes)]
    if not found:
        raise ValueError(f"no {edition} notebook's name starts with any of {prefixes}")
    return found


def settings_for_this_cpu(names: list[str], current: str) -> list[str]:
    """``names`` less the settings that are this CPU's own kernels under another name (``avx2``
    where the CPU's best is AVX2), which would only run ``native`` again."""
    unknown = [n for n in names if n not in SETTINGS]
    if unknown:
        raise ValueError(f"settings must be among {sorted(SETTINGS)}, got {unknown}")
    return [n for n in names if SETTINGS[n][1] is None or SETTINGS[n][1] != current]


def _label(path: pathlib.Path) -> str:
    path = pathlib.Path(path).resolve()
    return str(path.relative_to(ROOT / "notebooks")) if path.is_relative_to(ROOT / "notebooks") else str(path)


def _outside(path: pathlib.Path) -> tuple[str, ...]:
    """pytest's options for a notebook outside the repository (the sweep's own test): the
    repository's nbval options, and the notebook's folder as the root its test ids start from."""
    path = pathlib.Path(path).resolve()
    if path.is_relative_to(ROOT):
        return ()
    return ("-c", str(ROOT / "pyproject.toml"), "--rootdir", str(path.parent))


def sweep_one(path: pathlib.Path, setting: str, *, python: str = sys.executable,
              run=run_nbval) -> Finding:
    """nbval on one notebook under one setting, with the kernel's capability checked."""
    env, expected = SETTINGS[setting]
    # CI="" keeps the root conftest.py from spreading this one notebook over xdist workers.
    result: NbvalRun = run(python, [path], env={**env, "CI": ""}, probe=CAPABILITY_PROBE,
                 args=("-vv",) + _outside(path))      # -vv: nbval's diffs with whole lines
    finding = Finding(_label(path), setting, seconds=round(result.seconds, 1))
    probe = result.probes.get(path.name, {})
    try:
        reported = read_probe(probe.get("stdout", ""))
        finding.capability, finding.threads = reported["capability"], reported.get("threads", 0)
    except (KeyError, ValueError):
        finding.problem = f"the kernel did not report its capability: {probe or result.output[-1500:]}"
    if expected is not None and finding.capability and finding.capability != expected:
        finding.problem = f"ran with {finding.capability}, not {expected}: {env} did not take effect"
    cells = result.cells.get(path.name, [])
    finding.cells = len(cells)
    if not cells and not finding.problem:
        finding.problem = f"nbval ran no cell:\n{result.output[-1500:]}"
    for cell in result.failures(path.name):
        finding.differences[cell.cell] = differing_lines(cell.message)
    return finding


def sweep(paths: list[pathlib.Path], settings: list[str], jobs: int = 2, report=print) -> list[Finding]:
    """Every notebook under every setting, ``jobs`` at a time (the chapters that train, the long
    ones, first); ``report`` gets a line per finding as it comes."""
    order = sorted(((p, s) for p in paths for s in settings), key=lambda ps: (not trains(ps[0]), str(ps[0]), ps[1]))
    findings = []
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for future in as_completed([pool.submit(sweep_one, p, s) for p, s in order]):
            finding = future.result()
            findings.append(finding)
            status = finding.problem.splitlines()[0] if finding.problem else (
                f"{len(finding.differences)} differing cells" if finding.differences else "same")
            report(f"{finding.setting:16s} {finding.notebook:44s} {finding.capability:8s} {finding.threads} thr "
                   f"{finding.seconds:6.0f} s  {status}", flush=True)
    return findings


def summary(findings: list[Finding]) -> str:
    """Every differing compared output line, by notebook and cell, with the settings it differs in."""
    lines = []
    for f in sorted(findings, key=lambda f: (f.notebook, f.setting)):
        if f.problem:
            lines.append(f"{f.notebook} [{f.setting}]: {f.problem}")
        for cell, diff in f.differences.items():
            lines.append(f"{f.notebook} {cell} [{f.setting}, {f.capability}]:")
            lines += [f"    {l[:200]}" for l in diff]
    return "\n".join(lines) or "no compared output differs"


# --------------------------------------------------------------------------- the printed digits' margins

# A committed output passes on every CPU when every number it prints lies farther from a rounding
# boundary (at the digits it is printed with) than the spread of that number across kernels.
# `margins` measures both: it runs a copy of the notebook whose print formats are widened to 12
# digits under each setting, and compares every printed number with the committed one.

_NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w])")
WIDE = 12       # the digits the widened copy prints
MARGIN = 10.0   # a printed number closer than this many spreads to a rounding boundary is listed
RELATIVE_FLOOR = 2.0 ** -21     # 4 float32 rounding steps (ulps): the least spread assumed of a non-zero number


def _matching_paren(text: str, start: int) -> int:
    """Index of the ``)`` closing the ``(`` at ``start`` (-1 if none), skipping strings naively."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return i
    return -1


def widen(source: str) -> str:
    """A code cell's source with every print precision widened to :data:`WIDE` digits: format
    specs (``{x:.4f}``, ``:7.3g``, ``:.1%``), ``round(x, 4)``, ``.round(3)`` and the precision
    of torch's, numpy's and pandas' printing."""
    source = re.sub(r"(:[<>^=]?[-+ ]?#?0?\d*,?)\.\d+([fFeEgG%])", rf"\1.{WIDE}\2", source)
    source = re.sub(r"\.round\(\d*\)", f".round({WIDE})", source)
    source = re.sub(r"set_printoptions\(precision=\d+", f"set_printoptions(precision={WIDE}", source)
    out, i = [], 0
    for match in re.finditer(r"(?<![\w.])round\(", source):
        if match.start() < i:
            continue
        close = _matching_paren(source, match.end() - 1)
        if close < 0:
            continue
        inner = source[match.end():close]
        widened = re.sub(r",\s*\d+\s*$", f", {WIDE}", inner)
        out.append(source[i:match.end()] + widened)
        i = close
    return "".join(out) + source[i:]


WIDE_SETUP = (f"import pandas as _pd, numpy as _np, torch as _torch\n_pd.set_option('display.precision', {WIDE})\n"
              "_pd.set_option('display.width', 10_000)\n_pd.set_option('display.max_columns', None)\n"
              f"_np.set_printoptions(precision={WIDE})\n_torch.set_printoptions(precision={WIDE})\n")


def _compared(cell) -> bool:
    """Whether nbval compares a cell's outputs (the Colab cell prints nothing off Colab)."""
    return cell.cell_type == "code" and not cell.source.lstrip().startswith(
        ("# NBVAL_IGNORE_OUTPUT", "# NBVAL_SKIP", COLAB_HEADER))


def split_numbers(text: str) -> tuple[str, list[str]]:
    """``(skeleton, numbers)``: the text with every number replaced by ``#`` and whitespace
    collapsed (so that wider columns and wrapped lines still match), and the numbers in order."""
    numbers = _NUMBER.findall(text)
    return " ".join(_NUMBER.sub("#", text).split()), numbers


def _value(number: str) -> float:
    return float(number.replace(",", ""))


def _unit(number: str) -> float | None:
    """The unit of the last printed digit of ``number`` (None for an integer: exact)."""
    mantissa, _, exponent = number.replace(",", "").lower().partition("e")
    if "." not in mantissa:
        return None
    return 10.0 ** (-len(mantissa.split(".")[1]) + (int(exponent) if exponent else 0))


@dataclass
class Margin:
    """One printed number of one compared cell: as committed, its spread over the settings, and
    how far (in spreads) its value lies from the nearest rounding boundary of the printed digits."""
    notebook: str
    cell: str
    committed: str
    values: dict[str, float]
    spread: float
    boundary: float                 # distance from the nearest rounding boundary
    margin: float                   # boundary / spread (inf when the spread is 0)
    # Equal under every setting here, but within MARGIN x 4 float32 ulps of a boundary: a float32
    # result may still differ on a CPU not measured (ARM); an exact float64 one is fine.
    review: bool = False


def execute_widened(path: pathlib.Path, setting: str, timeout: int = 1200):
    """The notebook at ``path``, widened (:func:`widen`), executed under ``setting`` in a fresh
    kernel; cells that raise do not stop it (a widened print may break an assert on a string)."""
    import os

    import nbformat
    from nbclient import NotebookClient
    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code" and not c.source.startswith(COLAB_HEADER)]
    for cell in code:
        cell.source = widen(cell.source)
    code[0].source = WIDE_SETUP + code[0].source
    env, _ = SETTINGS[setting]
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3", allow_errors=True,
                            resources={"metadata": {"path": str(path.parent)}})
    client.execute(env=dict(os.environ, **env, PYDEVD_DISABLE_FILE_VALIDATION="1"))
    return nb


def margins(path: pathlib.Path, settings: list[str], jobs: int = 2) -> tuple[list[Margin], list[str]]:
    """Every number that a compared cell of ``path`` prints with decimals: its spread over
    ``settings`` and its margin. Also returns the cells whose widened outputs could not be lined
    up with the committed ones (their text differs beyond the numbers)."""
    import nbformat
    committed = nbformat.read(path, as_version=4)
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        runs = dict(zip(settings, pool.map(lambda s: execute_widened(path, s), settings)))
    found, unaligned = [], []
    index = -1
    code_cells = {s: [c for c in nb.cells if c.cell_type == "code"] for s, nb in runs.items()}
    for cell in committed.cells:
        if cell.cell_type != "code":
            continue
        index += 1
        if not _compared(cell):
            continue
        skeleton, numbers = split_numbers(printed_text(cell.outputs))
        fresh = {s: split_numbers(printed_text(code_cells[s][index].outputs)) for s in settings}
        if any(sk != skeleton or len(ns) != len(numbers) for sk, ns in fresh.values()):
            unaligned.append(f"Cell {index}")
            continue
        for k, number in enumerate(numbers):
            unit = _unit(number)
            if unit is None:
                continue
            if all(fresh[s][1][k] == number for s in settings):
                continue        # printed alike when widened: text (source code) or an exact value
            values = {s: _value(fresh[s][1][k]) for s in settings}
            spread = max(values.values()) - min(values.values())
            ref = values[settings[0]]
            boundary = abs(abs(ref / unit - math.floor(ref / unit)) - 0.5) * unit
            found.append(Margin(_label(path), f"Cell {index}", number, values, spread, boundary,
                                boundary / spread if spread else math.inf,
                                review=not spread and boundary < MARGIN * abs(ref) * RELATIVE_FLOOR))
    return found, unaligned



def report_margins(paths, settings, jobs, below, json_path) -> int:
    """``--margins``: per notebook, the printed numbers whose margin is below ``below``, those to
    review, and the cells that could not be lined up; exit status 1 if any margin is below."""
    everything, status = {}, 0
    for path in paths:
        start = time.perf_counter()
        found, unaligned = margins(path, settings, jobs)
        low = sorted((m for m in found if m.margin < below), key=lambda m: m.margin)
        review = [m for m in found if m.review]
        varying = [m for m in found if m.spread > 0]
        print(f"{_label(path)}: {len(found)} computed numbers printed with decimals, {len(varying)} vary over the "
              f"settings, {len(low)} with a margin below {below:g}, {len(review)} to review "
              f"({time.perf_counter() - start:.0f} s)", flush=True)
        for m in low:
            print(f"    {m.cell}: {m.committed} spread {m.spread:.3g}, {m.boundary:.3g} from a rounding boundary "
                  f"(margin {m.margin:.3g}): {m.values}")
        for m in review:
            print(f"    review {m.cell}: {m.committed} is the same under every setting, {m.boundary:.3g} from a "
                  f"rounding boundary: fewer digits, unless it is computed exactly (float64 from exact inputs)")
        if unaligned:
            print(f"    not lined up (text differs beyond the numbers; check by hand): {', '.join(unaligned)}")
        status |= bool(low)
        everything[_label(path)] = {"margins": [asdict(m) for m in found], "unaligned": unaligned}
    if json_path:
        json_path.write_text(json.dumps({"settings": settings, "notebooks": everything}, indent=1,
                                        ensure_ascii=False, default=str) + "\n")
    return status


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("prefixes", nargs="*", help="only notebooks whose name starts so, e.g. 05 07")
    parser.add_argument("--edition", default="both", help="en, zh or both (default: both)")
    parser.add_argument("--settings", default=",".join(SETTINGS),
                        help=f"comma-separated, among {', '.join(SETTINGS)} (default: all)")
    parser.add_argument("--jobs", type=int, default=2, help="notebooks run at a time (default: 2)")
    parser.add_argument("--json", type=pathlib.Path, help="also write the findings to this file")
    parser.add_argument("--margins", action="store_true",
                        help="instead of nbval: measure every printed number's spread over the settings and "
                             "its distance from a rounding boundary (a widened copy of each notebook)")
    parser.add_argument("--below", type=float, default=MARGIN,
                        help=f"--margins: list the numbers whose margin is below this (default {MARGIN:g})")
    args = parser.parse_args(argv)
    try:
        if args.jobs < 1:
            raise ValueError(f"--jobs must be a positive integer, got {args.jobs}")
        paths = notebooks(args.prefixes, args.edition)
        import torch
        current = torch.backends.cpu.get_cpu_capability()
        settings = settings_for_this_cpu([s.strip() for s in args.settings.split(",") if s.strip()], current)
    except ValueError as error:
        parser.error(str(error))
    print(f"this CPU: {current}; settings: {', '.join(settings)}; {len(paths)} notebooks, {args.jobs} at a time",
          flush=True)
    start = time.perf_counter()
    if args.margins:
        return report_margins(paths, settings, args.jobs, args.below, args.json)
    findings = sweep(paths, settings, jobs=args.jobs)
    print(f"\n== compared outputs that differ ({time.perf_counter() - start:.0f} s)\n{summary(findings)}")
    if args.json:
        args.json.write_text(json.dumps({"cpu_capability": current, "settings": settings,
                                         "findings": [asdict(f) for f in findings]}, indent=1,
                                        ensure_ascii=False) + "\n")
    return 1 if any(f.problem or f.differences for f in findings) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
