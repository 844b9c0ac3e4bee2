"""Committed training outputs must not depend on the CPU: a second CPU capability in CI.

nbval compares every committed output with a fresh run, so a number a notebook prints must
be the same on every learner's machine. PyTorch picks its CPU kernels by the instructions the
CPU has (AVX-512, AVX2, or the portable defaults; MKL and oneDNN do the same, and oneDNN's
bfloat16 path needs AVX-512 BF16 or AMX), and training, which repeats those kernels
thousands of times, ends in other last digits, or other printed results, on another CPU.
A notebook committed on one machine once failed nbval on an AMD laptop for this reason.

CI checks it without a second machine: the second nbval run of every notebook, the one with
Colab's versions (``tests/test_colab.py``), runs with PyTorch held to the next lower
capability than this CPU's (``tools/colab_check.py``'s ``capability_plan``):

* a CPU with AVX-512: ``ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 MKL_ENABLE_INSTRUCTIONS=AVX2``
* a CPU with AVX2:    ``ATEN_CPU_CAPABILITY=default ONEDNN_MAX_CPU_ISA=SSE41 MKL_ENABLE_INSTRUCTIONS=SSE4_2``

and proves it took effect: after each notebook's last cell the same kernel reports
``torch.backends.cpu.get_cpu_capability()``, which that test asserts. One run for both
checks, because re-running the notebooks is most of CI's time. When a notebook fails there
and it is unclear whether Colab's versions or the CPU are the cause,
``python tools/colab_check.py portability [07]`` runs the lower capability alone, with this
environment's packages. A notebook that trains says so in its metadata,
``"bertcourse": {"trains": true}``: those are the ones that command runs by default.

This file tests the plan itself.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import colab_check  # tools/colab_check.py (conftest.py puts tools/ on the path)


def test_training_notebooks_are_known():
    names = [p.name for p in colab_check.training_notebooks()]
    assert names, "no training notebook found (metadata \"bertcourse\": {\"trains\": true})"
    for chapter in ("03_", "07_", "09_"):
        assert any(n.startswith(chapter) for n in names), f"chapter {chapter[:2]} trains; found only {names}"


def test_the_plan_holds_a_fresh_python_to_a_lower_capability():
    """The environment variables take effect in a new process (they are read once, at import)."""
    plan = colab_check.capability_plan()
    if plan is None:
        pytest.skip("this CPU already runs PyTorch's portable kernels: no lower capability to test")
    assert plan.expected != plan.current
    out = subprocess.run([sys.executable, "-c", colab_check.CAPABILITY_PROBE], capture_output=True,
                         text=True, env=dict(os.environ, **plan.env), timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["capability"] == plan.expected, (
        f"{plan.env} did not hold PyTorch to {plan.expected}: {out.stdout}")
