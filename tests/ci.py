"""What "in CI" means, and what a test does when something it needs is missing (skip on a
learner's machine, offline, without a browser; fail in CI, where every test must really run);
how the Colab-stack nbval run is split over CI's workers, and the folders they share."""
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

import pytest


def in_ci() -> bool:
    """Whether the environment variable CI is set to something true (.ci/run sets it)."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def skip_or_fail(reason: str):
    """Skip with ``reason`` locally; fail with it in CI."""
    if in_ci():
        pytest.fail(f"{reason} (CI is set: this must not be skipped)", pytrace=False)
    pytest.skip(reason)


def chromium_and_playwright():
    """``(Chromium's path, playwright's sync_playwright)`` for the browser tests: Debian's
    ``chromium`` or the browser ``$CHROMIUM`` names (e.g. Google Chrome on a laptop), driven by
    Playwright through ``executable_path`` (its own browser download is never used). Skips
    locally and fails in CI when either is missing."""
    chromium = shutil.which(os.environ.get("CHROMIUM") or "chromium")
    if chromium is None:
        skip_or_fail("Debian's chromium is not installed (apt-get install -y chromium), "
                     "and $CHROMIUM names no browser")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        skip_or_fail("the playwright Python package is not installed (pip install -r requirements.txt)")
    return chromium, sync_playwright


# ----------------------------------------------------------------------------- shared between workers

# The second nbval run (Colab's versions, other CPU kernels: tests/test_colab.py) is most of CI's
# time, so it runs in two shards, one per CI worker, in parallel. Balanced by the chapters' measured
# times there (float32 under AVX2 kernels; `bash .ci/run` on the 2-core machine, 2026-11-26):
# chapter 9 alone 297-313 s (the first shard, with the environment's build, 20-22 s since it is
# installed without bytecode), all the others together 206-228 s. The second shard runs in two
# nbval calls since 2026-11-28 (the chapters that train at AVX2, the others at the portable
# kernels, a few seconds more each: colab_check.capability_plan). Chapter 10 (2026-11-29) joined the
# second shard and made it the longest test of the run (772 s on a 2-core AVX2-only AMD EPYC, chapter
# 10 about 250 s of it), so it moved to the first: chapters 9 and 10 train on the real model, each a
# few minutes; the other ten together about as long. Chapter 11 (2026-11-29, about 2 minutes there)
# joined the second shard, the shorter one, and so did chapter 12 (2026-11-29, about 2 minutes there too).
COLAB_NBVAL_SHARDS = (("09", "10"), ("07", "11", "12", "14", "03", "08", "13", "05", "01", "02", "04", "06"))


COLAB_NBVAL_TEST = "test_notebook_passes_nbval_with_colabs_versions"    # its test in tests/test_colab.py


def colab_shard(notebook_name: str) -> int:
    """The shard (index into COLAB_NBVAL_SHARDS) that runs a chapter's notebook."""
    for i, chapters in enumerate(COLAB_NBVAL_SHARDS):
        if notebook_name[:2] in chapters:
            return i
    raise ValueError(f"{notebook_name}: no Colab nbval shard lists chapter {notebook_name[:2]!r}; "
                     f"add it to COLAB_NBVAL_SHARDS in {__file__}")


def run_folder(config, name: str) -> pathlib.Path:
    """A folder in the temporary directory that every process of this pytest run shares (the
    workers of pytest-xdist and the process that started them): named by the run's id, so two
    runs never share one. The root conftest.py removes the run's folders when the run ends."""
    uid = os.environ.get("PYTEST_XDIST_TESTRUNUID") or getattr(config.option, "testrunuid", None)
    if not uid:
        raise RuntimeError("no test-run id: the root conftest.py sets one (config.option.testrunuid)")
    return pathlib.Path(tempfile.gettempdir()) / f"bertcourse-{name}-{uid}"


def remove_run_folders(uid: str) -> None:
    """Delete this run's shared folders (a throw-away environment is about 1 GB of small files:
    ``rm -rf`` in the background, nothing waits for it)."""
    for folder in pathlib.Path(tempfile.gettempdir()).glob(f"bertcourse-*-{uid}"):
        if sys.platform == "win32":
            shutil.rmtree(folder, ignore_errors=True)
        else:
            subprocess.Popen(["rm", "-rf", str(folder)], start_new_session=True,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
