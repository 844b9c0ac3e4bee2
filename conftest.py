"""How CI spreads ``pytest`` over its cores (a root conftest: it must see the notebooks too).

In CI (``CI`` set, as ``.ci/run`` does) ``pytest`` runs on two pytest-xdist workers with
``--dist loadfile``: each file's tests run on one worker, in order, so a notebook's nbval cells
share one kernel, and the tests that share one expensive session fixture stay together: the
browser tests (one JupyterLab), the Colab-stack tests (one environment), the book tests (one
build). At the end
a table gives the time of each stage (test time, summed over the workers). Elsewhere
``pytest`` runs in one process, unless ``-n`` asks for workers.
"""
from __future__ import annotations

import os
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent
WORKERS_IN_CI = 2           # CI's machine has 2 cores
SHARED = {  # the test files with one expensive session fixture each
    "test_browser.py": "browser (JupyterLab + Chromium)",
    "test_book.py": "book (Sphinx + Chromium)",
    "test_colab.py": "Colab's versions, AVX2 kernels (Chinese edition)",
}


def _in_ci() -> bool:       # as tests/ci.py's in_ci
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config):
    """In CI, WORKERS_IN_CI xdist workers with ``--dist loadfile`` (a file's tests on one
    worker, in order), unless the command line chose (``-n``)."""
    opt = config.option
    if (_in_ci() and getattr(opt, "numprocesses", "absent") is None and getattr(opt, "dist", "no") == "no"
            and not hasattr(config, "workerinput")):
        opt.numprocesses, opt.dist = WORKERS_IN_CI, "loadfile"


def stage_of(path: pathlib.Path) -> str:
    if path.suffix == ".ipynb":
        return "nbval, Chinese edition" if path.parent.name == "zh" else "nbval, English edition"
    return SHARED.get(path.name, "unit tests")


_STAGE_SECONDS: dict = {}


def pytest_runtest_logreport(report):
    stage = stage_of(ROOT / report.nodeid.split("::")[0].split("@")[0])
    _STAGE_SECONDS[stage] = _STAGE_SECONDS.get(stage, 0.0) + report.duration


def pytest_terminal_summary(terminalreporter):
    if _STAGE_SECONDS and _in_ci():
        terminalreporter.write_sep("=", "time per stage (test time, summed over the workers)")
        for stage, seconds in sorted(_STAGE_SECONDS.items(), key=lambda kv: -kv[1]):
            terminalreporter.write_line(f"{stage:52s} {seconds:7.0f} s")
