"""Committed outputs must not depend on the CPU: other CPU kernels in CI, and the sweep.

nbval compares every committed output with a fresh run, so a number a notebook prints must
be the same on every learner's machine. PyTorch picks its CPU kernels by the instructions the
CPU has (AVX-512, AVX2, or the portable defaults; MKL and oneDNN do the same, and oneDNN's
bfloat16 path needs AVX-512 BF16 or AMX), and a float computed by other kernels can end in
other last digits, or training in other printed results. Notebooks committed on one machine
have failed nbval on an AMD laptop, on an Intel CPU with AMX and on an AVX2-only AMD EPYC.

CONTRIBUTING.md ("Outputs that hold on every CPU") gives the rule that makes outputs portable
by construction and ``tools/kernel_sweep.py``, which runs every notebook under every kernel
setting an x86 machine can produce. CI checks a second setting on every machine without a
second machine: the second nbval run of every notebook, the one with Colab's versions
(``tests/test_colab.py``), holds PyTorch to other kernels than this CPU's best
(``tools/colab_check.py``'s ``capability_plan``):

* a notebook that does not train: the portable kernels (``ATEN_CPU_CAPABILITY=default
  ONEDNN_MAX_CPU_ISA=SSE41 MKL_ENABLE_INSTRUCTIONS=SSE4_2``), a few seconds each;
* a notebook that trains (metadata ``"bertcourse": {"trains": true}``): AVX2 (``avx2``, oneDNN
  and MKL held to AVX2) on a CPU with AVX-512; on an AVX2-only CPU its own kernels, because
  the portable ones made that stage minutes longer there (the chapters that train assert their
  results with margins measured across kernels; the sweep compares all three settings);

and proves it took effect: after each notebook's last cell the same kernel reports
``torch.backends.cpu.get_cpu_capability()``, which that test asserts.

This file tests the plan itself (``tests/test_kernel_sweep.py`` tests the sweep).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch

import colab_check  # tools/colab_check.py (conftest.py puts tools/ on the path)

CURRENT = torch.backends.cpu.get_cpu_capability()


def test_training_notebooks_are_known():
    names = [p.name for p in colab_check.training_notebooks()]
    assert names, "no training notebook found (metadata \"bertcourse\": {\"trains\": true})"
    for chapter in ("03_", "07_", "09_"):
        assert any(n.startswith(chapter) for n in names), f"chapter {chapter[:2]} trains; found only {names}"
    assert not any(n.startswith(("01_", "05_")) for n in names), names


@pytest.mark.parametrize("trains", [False, True], ids=["does not train", "trains"])
def test_the_plan_differs_from_this_cpu_wherever_it_can(trains):
    plan = colab_check.capability_plan(trains)
    if CURRENT.startswith("AVX512"):
        assert plan is not None and plan.expected == ("AVX2" if trains else "DEFAULT")
    elif CURRENT == "AVX2":
        assert (plan is None) == trains, plan          # the portable kernels for the cheap ones only
        if plan is not None:
            assert plan.expected == "DEFAULT"
    else:
        assert plan is None, f"{CURRENT}: no x86 level to hold to, got {plan}"
    if plan is not None:
        assert plan.current == CURRENT and plan.expected != CURRENT
        assert plan.env == colab_check.KERNEL_LIMITS[plan.expected]


def test_notebooks_are_grouped_by_their_plan():
    groups = colab_check.plan_groups(colab_check.NOTEBOOKS)
    seen = [p for _, group in groups for p in group]
    assert sorted(seen) == sorted(colab_check.NOTEBOOKS)
    for plan, group in groups:
        assert len({colab_check.trains(p) for p in group}) == 1
        assert plan == colab_check.capability_plan(colab_check.trains(group[0]))


@pytest.mark.parametrize("level", sorted(colab_check.KERNEL_LIMITS))
def test_the_limits_hold_a_fresh_python_to_their_capability(level):
    """The environment variables take effect in a new process (they are read once, at import)."""
    if not (CURRENT.startswith("AVX512") or (CURRENT == "AVX2" and level == "DEFAULT")):
        pytest.skip(f"this CPU ({CURRENT}) has no {level} level below its own")
    out = subprocess.run([sys.executable, "-c", colab_check.CAPABILITY_PROBE], capture_output=True,
                         text=True, env=dict(os.environ, **colab_check.KERNEL_LIMITS[level]), timeout=120)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["capability"] == level, f"{colab_check.KERNEL_LIMITS[level]} did not hold PyTorch to {level}: {report}"
    assert report["mkldnn_bf16"] is False, "oneDNN's bfloat16 path needs AVX-512: the limit must switch it off"
