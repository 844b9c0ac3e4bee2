"""How CI spreads ``pytest`` over its cores (a root conftest: it must see the notebooks too).

In CI (``CI`` set, as ``.ci/run`` does) ``pytest`` runs on two pytest-xdist workers, scheduled
by :class:`GroupScheduling` (xdist's ``loadfile`` with our groups): each file's tests run on one
worker, in order (a notebook's nbval cells share one kernel; the tests that share
one expensive session fixture stay together: the browser tests, one JupyterLab; the book tests,
one build), except the Colab-stack nbval run (tests/test_colab.py), the longest stage, whose
notebooks are split in two groups (``tests/ci.py``: ``COLAB_NBVAL_SHARDS``) that the two workers
run at the same time in one shared throw-away environment. The groups go out longest first
(xdist's own reordering by test count is switched off), so both workers finish together. At the
end a table gives the time of each stage (test time, summed over the workers). Elsewhere
``pytest`` runs in one process, unless ``-n`` asks for workers.
"""
from __future__ import annotations

import os
import pathlib
import sys
import uuid

import pytest

ROOT = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT / "tests"))     # tests/ci.py: what "in CI" means, written once
from ci import COLAB_NBVAL_TEST, colab_shard, in_ci, remove_run_folders  # noqa: E402
WORKERS_IN_CI = 2           # CI's machine has 2 cores
# The training chapters use every core (bertcourse.utils.set_threads), at most BERTCOURSE_THREADS.
# Under pytest, notebooks run side by side (two workers, or a notebook beside the tests), and threads
# that wait for a busy core make a step many times slower: one thread per kernel, unless the caller
# sets another number (tools/kernel_sweep.py's 2-thread settings do).
os.environ.setdefault("BERTCOURSE_THREADS", "1")
SHARED = {  # the test files with one expensive session fixture each
    "test_browser.py": "browser (JupyterLab + Chromium)",
    "test_book.py": "book (Sphinx + Chromium)",
    "test_colab.py": "Colab's versions, other CPU kernels (Chinese edition)",
}


# The edit-test loop's quick tier, `pytest tests -m "not slow"` (CONTRIBUTING.md): everything but
# the notebooks and these files, which run notebooks, browsers, subprocesses or trainings.
SLOW_FILES = {"test_browser.py", "test_book.py", "test_colab.py", "test_portability.py", "test_distributed.py",
              "test_finetune.py", "test_training.py", "test_checkpoints.py", "test_cli.py", "test_pretrained_bert.py",
              "test_finetuning_baselines.py", "test_public_inputs.py", "test_measured_bounds.py", "test_seq2seq.py",
              "test_ddp_example.py", "test_task_heads.py"}


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: not in the quick tier (pytest tests -m 'not slow')")
    # One id per pytest run, known to this process and (through xdist) to its workers: the
    # folders the workers share are named by it (tests/ci.py: run_folder).
    if not hasattr(config, "workerinput") and getattr(config.option, "testrunuid", None) is None:
        config.option.testrunuid = uuid.uuid4().hex


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config):
    """In CI, WORKERS_IN_CI xdist workers scheduled by :class:`GroupScheduling` in our order,
    unless the command line chose (``-n``)."""
    opt = config.option
    if (in_ci() and getattr(opt, "numprocesses", "absent") is None and getattr(opt, "dist", "no") == "no"
            and not hasattr(config, "workerinput")):
        opt.numprocesses, opt.dist, opt.loadscopereorder = WORKERS_IN_CI, "loadfile", False
        config.stash[_GROUPED] = True


_GROUPED = pytest.StashKey[bool]()


@pytest.hookimpl(optionalhook=True)     # pytest-xdist's hook: unknown where xdist is not installed
def pytest_xdist_make_scheduler(config, log):
    """Our groups (:func:`group_of_nodeid`) where CI asked for them; xdist's own otherwise."""
    if config.stash.get(_GROUPED, False):
        return GroupScheduling(config, log)
    return None


try:        # pytest-xdist is a test requirement; without it pytest runs in one process
    from xdist.scheduler import LoadScopeScheduling
except ImportError:         # pragma: no cover
    LoadScopeScheduling = object


class GroupScheduling(LoadScopeScheduling):
    """xdist's scope scheduling with the scopes of :func:`group_of_nodeid`: a file, or a shard of
    the Colab-stack nbval run. A scope's tests run on one worker, in collection order, and the
    scopes go out in collection order (``--no-loadscope-reorder``), which
    ``pytest_collection_modifyitems`` makes longest first."""

    def _split_scope(self, nodeid: str) -> str:
        return group_of_nodeid(nodeid)


def pytest_sessionfinish(session):
    if not hasattr(session.config, "workerinput"):      # the process that started the workers
        remove_run_folders(session.config.option.testrunuid)


def stage_of(path: pathlib.Path) -> str:
    if path.suffix == ".ipynb":
        return "nbval, Chinese edition" if path.parent.name == "zh" else "nbval, English edition"
    return SHARED.get(path.name, "unit tests")


_STAGE_SECONDS: dict = {}


# Test files whose tests compute the same thing that the package caches per process: each runs in
# the group of the file named, so one worker computes it once. chapter 9's q4 (few_shot_accuracies:
# MiniLM's features of the 3,000 review sentences) took 16.7 s in each of the two files in a CI
# run on the 2-core Intel Xeon (2026-11-27), which xdist had handed to different workers; chapter 10's
# q1 (one_side_baselines: eight logistic regressions on SNLI's bags of words) 25-50 s on one thread.
SAME_WORKER = {"tests/test_exercises_ch09.py": "tests/test_exercises.py",
               "tests/test_exercises_ch10.py": "tests/test_exercises.py"}


def group_of_nodeid(nodeid: str) -> str:
    """The group of a test, from its node id: its file (or the file :data:`SAME_WORKER` names);
    the Colab-stack nbval test of a notebook in the first shard (tests/ci.py: COLAB_NBVAL_SHARDS)
    stays with the rest of test_colab.py, which builds the environment; each other shard is a
    group of its own, for the other worker."""
    path, _, rest = nodeid.partition("::")
    if rest.startswith(COLAB_NBVAL_TEST + "["):
        shard = colab_shard(pathlib.PurePosixPath(rest[len(COLAB_NBVAL_TEST) + 1:-1]).name)
        return path if shard == 0 else f"colab-nbval-{shard}"
    return SAME_WORKER.get(path, path)


def _heavy_first(nodeid: str) -> int:
    """Inside test_colab.py's group, the first shard's nbval test first: xdist hands a worker its
    next group while the current group's last two tests run, so the group's long test must not
    be one of its last."""
    return 0 if nodeid.partition("::")[2].startswith(COLAB_NBVAL_TEST + "[") else 1


# The longest groups first, so that the workers are handed them before the short ones and finish
# together. Measured by `bash .ci/run` in a fresh clone on the quiet 2-core Intel Xeon (2026-11-27,
# at ed56e92; pytest 874 s for 1,670 s of tests summed over the two workers): test_colab.py ~395 s
# (the environment 29 s, chapter 9's Colab-stack nbval 309 s, the widget tests 51 s), the browser
# 186 s, the other Colab-stack shard 297 s, chapter 9 ~200 s, chapter 10 ~90 s, the book ~86 s,
# chapter 7 ~82 s, test_finetune.py ~40 s, test_distributed.py ~36 s, chapter 3 ~30 s, the
# exercises ~17 s, test_cli.py ~15 s; everything else is shorter. The browser goes before the other
# Colab-stack shard, which would otherwise wait for the environment that test_colab.py builds.
LONGEST_FIRST = ["tests/test_colab.py", "tests/test_browser.py", "colab-nbval-1",
                 "notebooks/09_fine_tuning.ipynb", "notebooks/14_scaling_up.ipynb", "tests/test_book.py",
                 "notebooks/07_pretraining.ipynb", "tests/test_finetune.py", "tests/test_distributed.py",
                 "notebooks/03_transformer.ipynb", "tests/test_exercises.py", "tests/test_cli.py"]
_LONGEST_RANK = {name: i for i, name in enumerate(LONGEST_FIRST)}


def _rank(group: str) -> int:
    """Where a group goes out: LONGEST_FIRST's order, then the other notebooks (chapters 1, 2, 4,
    5, 6 and 8, about 10 s each in CI), then the other test files (under 10 s). Without the second
    rule the notebooks came last (pytest collects tests/ before notebooks/), so a chapter could be
    the last group of the run while the other worker had nothing left."""
    if group in _LONGEST_RANK:
        return _LONGEST_RANK[group]
    return len(_LONGEST_RANK) + (0 if group.endswith(".ipynb") else 1)


def pytest_collection_modifyitems(items):
    for item in items:
        path = pathlib.Path(str(item.fspath))
        if path.suffix == ".ipynb" or path.name in SLOW_FILES:
            item.add_marker(pytest.mark.slow)
    if in_ci():          # a stable sort: each group's tests (a notebook's cells) keep their order
        items.sort(key=lambda item: (_rank(group_of_nodeid(item.nodeid)), _heavy_first(item.nodeid)))


def pytest_runtest_logreport(report):
    stage = stage_of(ROOT / report.nodeid.split("::")[0].split("@")[0])
    _STAGE_SECONDS[stage] = _STAGE_SECONDS.get(stage, 0.0) + report.duration


def pytest_terminal_summary(terminalreporter):
    if _STAGE_SECONDS and in_ci():
        terminalreporter.write_sep("=", "time per stage (test time, summed over the workers)")
        for stage, seconds in sorted(_STAGE_SECONDS.items(), key=lambda kv: -kv[1]):
            terminalreporter.write_line(f"{stage:52s} {seconds:7.0f} s")
