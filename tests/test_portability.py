"""Committed training outputs must not depend on the CPU: a second CPU capability in CI.

nbval compares every committed output with a fresh run, so a number a notebook prints must
be the same on every learner's machine. PyTorch picks its CPU kernels by the instructions the
CPU has (AVX-512, AVX2, or the portable defaults; MKL and oneDNN do the same, and oneDNN's
bfloat16 path needs AVX-512 BF16 or AMX), and training, which repeats those kernels
thousands of times, ends in other last digits, or other printed results, on another CPU.

This test re-runs the training notebooks through nbval (strict, pyproject's addopts, as the
main run) in a subprocess whose PyTorch is held to the next lower capability:

* a CPU with AVX-512: ``ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 MKL_ENABLE_INSTRUCTIONS=AVX2``
* a CPU with AVX2:    ``ATEN_CPU_CAPABILITY=default ONEDNN_MAX_CPU_ISA=SSE41 MKL_ENABLE_INSTRUCTIONS=SSE4_2``

and proves it took effect: after each notebook's last cell the same kernel reports
``torch.backends.cpu.get_cpu_capability()``. A notebook that trains says so in its metadata,
``"bertcourse": {"trains": true}``; while no notebook carries that key, the chapters named in
TRAINING_FALLBACK are taken.

By hand: ``python tools/colab_check.py portability [07]``.
"""
from __future__ import annotations

import importlib.util
import json
import pathlib
import sys
from dataclasses import dataclass

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
TRAINING_FALLBACK = ("03_", "07_", "09_")      # used only while no notebook has the marker

CAPABILITY_PROBE = """\
import json, torch
print(json.dumps({"capability": torch.backends.cpu.get_cpu_capability(),
                  "mkldnn_bf16": bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())}))
"""


def training_notebooks() -> list[pathlib.Path]:
    """Notebooks whose metadata says ``"bertcourse": {"trains": true}``; the fallback list
    while no notebook has a ``trains`` key at all."""
    marked, any_marker = [], False
    for path in NOTEBOOKS:
        meta = json.loads(path.read_text()).get("metadata", {}).get("bertcourse", {})
        if isinstance(meta, dict) and "trains" in meta:
            any_marker = True
            if meta["trains"]:
                marked.append(path)
    if any_marker:
        return marked
    return [p for p in NOTEBOOKS if p.name.startswith(TRAINING_FALLBACK)]


@dataclass
class CapabilityPlan:
    current: str        # this CPU's, as torch reports it
    expected: str       # what the kernel must report under `env`
    env: dict


def capability_plan() -> CapabilityPlan | None:
    """The next lower capability than this CPU's best, or None when there is none."""
    import torch
    current = torch.backends.cpu.get_cpu_capability()
    if current.startswith("AVX512"):
        return CapabilityPlan(current, "AVX2", {"ATEN_CPU_CAPABILITY": "avx2",
                                                "ONEDNN_MAX_CPU_ISA": "AVX2",
                                                "MKL_ENABLE_INSTRUCTIONS": "AVX2"})
    if current == "AVX2":
        return CapabilityPlan(current, "DEFAULT", {"ATEN_CPU_CAPABILITY": "default",
                                                   "ONEDNN_MAX_CPU_ISA": "SSE41",
                                                   "MKL_ENABLE_INSTRUCTIONS": "SSE4_2"})
    return None         # already the portable kernels (or a CPU family without lower ones)


def _load_tool(name: str):
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def test_training_notebooks_are_known():
    names = [p.name for p in training_notebooks()]
    assert names, "no training notebook found (metadata \"bertcourse\": {\"trains\": true})"
    assert any(n.startswith("07_") for n in names), f"chapter 7 trains; found only {names}"


def _training_ids():
    return [p.name for p in training_notebooks()]


@pytest.fixture(scope="session")
def portability_run(request):
    plan = capability_plan()
    if plan is None:
        pytest.skip("this CPU already runs PyTorch's portable kernels: no lower capability to test")
    wanted = [item.callspec.params["notebook"] for item in request.session.items
              if item.originalname == "test_training_outputs_hold_on_another_cpu_capability"
              and hasattr(item, "callspec")]
    paths = [p for p in training_notebooks() if p.name in set(wanted)]
    tool = _load_tool("colab_check")
    run = tool.run_nbval(sys.executable, paths, env=plan.env, probe=CAPABILITY_PROBE, timeout=1800)
    print(f"\n{plan.current} -> {plan.expected}: nbval on {[p.name for p in paths]}: {run.seconds:.0f} s")
    return plan, run


@pytest.mark.parametrize("notebook", _training_ids())
def test_training_outputs_hold_on_another_cpu_capability(notebook, portability_run):
    plan, run = portability_run
    cells = run.cells.get(notebook, [])
    assert cells, f"{notebook}: nbval ran no cell:\n{run.output[-3000:]}"
    probe = run.probes.get(notebook, {})
    assert probe.get("stdout"), f"{notebook}: the kernel probe printed nothing: {probe}"
    capability = json.loads(probe["stdout"])["capability"]
    assert capability == plan.expected, (
        f"{notebook}: the kernel ran with {capability}, not {plan.expected}: {plan.env} did not take effect")
    failures = run.failures(notebook)
    if failures:
        pytest.fail(
            f"{notebook}: {len(failures)} of {len(cells)} cells print other outputs when PyTorch "
            f"runs {plan.expected} kernels instead of this CPU's {plan.current} ({plan.env}): "
            f"{[c.cell for c in failures]} (nbval counts code cells from 0). A committed output "
            f"must be the same on every CPU: print fewer digits, compare with a tolerance, or make "
            f"the computation independent of the kernels (float64, no bf16 autocast).\n"
            f"{run.report(notebook)}", pytrace=False)
