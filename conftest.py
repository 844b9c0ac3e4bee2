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

import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT / "tests"))     # tests/ci.py: what "in CI" means, written once
from ci import in_ci  # noqa: E402
WORKERS_IN_CI = 2           # CI's machine has 2 cores
SHARED = {  # the test files with one expensive session fixture each
    "test_browser.py": "browser (JupyterLab + Chromium)",
    "test_book.py": "book (Sphinx + Chromium)",
    "test_colab.py": "Colab's versions, AVX2 kernels (Chinese edition)",
}


# The edit-test loop's quick tier, `pytest tests -m "not slow"` (CONTRIBUTING.md): everything but
# the notebooks and these files, which run notebooks, browsers, subprocesses or trainings.
SLOW_FILES = {"test_browser.py", "test_book.py", "test_colab.py", "test_portability.py", "test_distributed.py",
              "test_finetune.py", "test_training.py", "test_checkpoints.py", "test_cli.py", "test_hf_weights.py",
              "test_probing.py", "test_public_inputs.py", "test_spread.py", "test_seq2seq.py"}


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: not in the quick tier (pytest tests -m 'not slow')")




@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config):
    """In CI, WORKERS_IN_CI xdist workers with ``--dist loadfile`` (a file's tests on one
    worker, in order), unless the command line chose (``-n``)."""
    opt = config.option
    if (in_ci() and getattr(opt, "numprocesses", "absent") is None and getattr(opt, "dist", "no") == "no"
            and not hasattr(config, "workerinput")):
        opt.numprocesses, opt.dist = WORKERS_IN_CI, "loadfile"


def stage_of(path: pathlib.Path) -> str:
    if path.suffix == ".ipynb":
        return "nbval, Chinese edition" if path.parent.name == "zh" else "nbval, English edition"
    return SHARED.get(path.name, "unit tests")


_STAGE_SECONDS: dict = {}


# The longest files first, so that xdist's loadfile hands them out before the short ones and
# the two workers finish together (measured in CI: Colab stack ~590 s, browser ~400 s, chapter 9
# ~130 s, chapter 7 ~80 s, chapter 10 ~65 s, the book ~110 s; everything else is shorter).
LONGEST_FIRST = ["test_colab.py", "test_browser.py", "09_fine_tuning.ipynb", "07_pretraining.ipynb",
                 "10_scaling_up.ipynb", "test_book.py", "03_transformer.ipynb"]


def pytest_collection_modifyitems(items):
    for item in items:
        path = pathlib.Path(str(item.fspath))
        if path.suffix == ".ipynb" or path.name in SLOW_FILES:
            item.add_marker(pytest.mark.slow)
    if in_ci():          # a stable sort: each file's tests (a notebook's cells) keep their order
        rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
        items.sort(key=lambda item: rank.get(pathlib.Path(str(item.fspath)).name, len(rank)))


def pytest_runtest_logreport(report):
    stage = stage_of(ROOT / report.nodeid.split("::")[0].split("@")[0])
    _STAGE_SECONDS[stage] = _STAGE_SECONDS.get(stage, 0.0) + report.duration


def pytest_terminal_summary(terminalreporter):
    if _STAGE_SECONDS and in_ci():
        terminalreporter.write_sep("=", "time per stage (test time, summed over the workers)")
        for stage, seconds in sorted(_STAGE_SECONDS.items(), key=lambda kv: -kv[1]):
            terminalreporter.write_line(f"{stage:52s} {seconds:7.0f} s")
